#!lua flags=allow-key-locking
--[[
  read-jobs: the records and metas of given jobs, by their keys (the second
  phase of a listing: the ids come from a set first, list-jobs.lua). Nothing
  is written. Records, with their payloads, are read LUA_READ_BATCH jobs at a
  time, and the read stops before the job whose record passes the byte
  budget (the first job is always read), so no call blocks Redis for long
  whatever the payloads; metas alone are small and read in one sweep.

  KEYS[2i-1]  record of job i   string: job record JSON (src/queue/keys.ts jobPairs)
  KEYS[2i]    meta of job i     string: job meta JSON (lib/records.lua)
  KEYS[2n+1]  with "L": the jobs' topic's label set (lib/labels.lua)

  ARGV[1]  "1" read records and metas, "0" metas only, "L" metas and of each record only its labels
           (answered as a record of them and a null payload: lib/labels.lua reads them off its start): when
           the topic's label set is empty no live job of it carries one, and "L" reads as "0"; else the
           records are read as with "1", whole, so the byte budget holds for them too
  ARGV[2]  most bytes of records read (with "1" or "L"): the read ends before the job that passes them

  Returns  per job read, in order: record JSON or false (with "0": false), meta JSON or false;
           fewer jobs than given when the byte budget ended the read
]]
-- @include labels
local rcall = redis.call
local labelsOnly = ARGV[1] == "L" and rcall("EXISTS", KEYS[#KEYS]) == 1
local withRecords = ARGV[1] == "1" or labelsOnly
local byteBudget = tonumber(ARGV[2])
local READ_BATCH = --[[LIMIT:LUA_READ_BATCH]]25
local n = math.floor(#KEYS / 2)
local out = {}

if not withRecords then
  -- Slices of MGET: unpack() is limited to a few thousand values.
  for i = 1, n, 1000 do
    local last = math.min(i + 999, n)
    local metaKeys = {}
    for j = i, last do metaKeys[#metaKeys + 1] = KEYS[2 * j] end
    local metas = rcall("MGET", unpack(metaKeys))
    for k = 1, #metaKeys do
      out[#out + 1] = false
      out[#out + 1] = metas[k]
    end
  end
  return out
end

local bytes = 0
for i = 1, n, READ_BATCH do
  local last = math.min(i + READ_BATCH - 1, n)
  local got = rcall("MGET", unpack(KEYS, 2 * i - 1, 2 * last))
  for k = 1, #got, 2 do
    local record = got[k]
    bytes = bytes + (record and #record or 0)
    -- The read ends before the job that passes the budget; the caller resumes there.
    if bytes > byteBudget and #out > 0 then return out end
    if labelsOnly and record then
      local labels = recordLabels(record)
      record = #labels == 0 and '{"payload":null}' or '{"labels":["' .. table.concat(labels, '","') .. '"],"payload":null}'
    end
    out[#out + 1] = record
    out[#out + 1] = got[k + 1]
  end
end
return out
