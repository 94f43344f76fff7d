#!lua flags=allow-key-locking
--[[
  cancel-jobs: cancels many scheduled jobs of one topic, given by id, with
  their meta keys: the page of a due window (the caller pages the window's
  ids from a position with list-jobs.lua first, so a walk goes on where the
  last call stopped), or ids the caller names. Each is checked in the due
  set again (a job claimed, cancelled or, for a window, moved since it was
  listed is skipped); jobs in flight are left alone. Each cancelled job's
  meta becomes a finished one, state "cancelled", with its attempt history,
  and its id goes into the topic's done set, as cancel.lua does; its record
  is left untouched. It reads metas only, never records or payloads.

  Metas are read LUA_READ_BATCH at a time, and a call stops once the metas it
  has read pass ARGV[3] bytes (at least one batch is read), so no call
  blocks Redis for long whatever the histories.

  KEYS[1]     due zset        id -> due ms
  KEYS[2]     lease zset      id -> lease deadline ms
  KEYS[3]     done zset       finished jobs: id -> finished ms
  KEYS[3+i]   meta of job i   string: job meta JSON (lib/records.lua; absent before its first claim)

  ARGV[1]  now, epoch ms
  ARGV[2]  "window" (ARGV[5…] id, listed due time pairs) or "ids" (ARGV[5…] ids)
  ARGV[3]  most bytes of metas read by this call (at least one batch is read)
  ARGV[4]  "window": "1" when the listing had more jobs after the page, else "0"; "ids": ""

  Returns  { cancelled, then "window": 1 when the window may hold more else 0,
             the position reached (score, id of the last job handled; "" "" with no job),
             jobs in flight in the topic;
             "ids": how many of the given ids were handled (the caller sends the rest again),
             of them in flight, of them neither scheduled nor in flight }
]]
-- @include records
local rcall = redis.call
local dueKey, leaseKey, doneKey = KEYS[1], KEYS[2], KEYS[3]
local nowText, mode, byteBudget, listedMore = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4] == "1"
local READ_BATCH = --[[LIMIT:LUA_READ_BATCH]]25
local window = mode == "window"

local ids, scores = {}, {}
if window then
  for i = 5, #ARGV - 1, 2 do
    ids[#ids + 1] = ARGV[i]
    scores[#scores + 1] = ARGV[i + 1]
  end
else
  for i = 5, #ARGV do ids[#ids + 1] = ARGV[i] end
end
local n = #ids

if n == 0 then
  if window then return { 0, listedMore and 1 or 0, "", "", rcall("ZCARD", leaseKey) } end
  return { 0, 0, 0, 0 }
end

local due = rcall("ZMSCORE", dueKey, unpack(ids))
local leased = window and {} or rcall("ZMSCORE", leaseKey, unpack(ids))
local metaPairs, gone, seen = {}, {}, {}
local inflight, missing, handled, bytes = 0, 0, 0, 0
while handled < n and bytes <= byteBudget do
  local last = math.min(handled + READ_BATCH, n)
  local take, metaKeys = {}, {}
  for j = handled + 1, last do
    local id = ids[j]
    -- A window's job still where it was listed; a named job anywhere in the due set.
    local scheduled = due[j] and (not window or tonumber(due[j]) == tonumber(scores[j]))
    if scheduled and not seen[id] then
      seen[id] = true
      take[#take + 1] = j
      metaKeys[#metaKeys + 1] = KEYS[3 + j]
    elseif not window then
      if leased[j] then
        inflight = inflight + 1
      elseif not seen[id] then
        missing = missing + 1
      end
    end
  end
  if #take > 0 then
    local metas = rcall("MGET", unpack(metaKeys))
    for k, j in ipairs(take) do
      local raw = metas[k]
      if raw then bytes = bytes + #raw end
      gone[#gone + 1] = ids[j]
      metaPairs[#metaPairs + 1] = metaKeys[k]
      metaPairs[#metaPairs + 1] = finishPending("cancelled", raw, nowText)
    end
  end
  handled = last
end

-- Writes first (metas, done set), then the jobs leave the due set.
if #gone > 0 then
  writeFinished(doneKey, nowText, gone, metaPairs)
  rcall("ZREM", dueKey, unpack(gone))
end
if window then
  local more = (listedMore or handled < n) and 1 or 0
  return { #gone, more, scores[handled], ids[handled], rcall("ZCARD", leaseKey) }
end
return { #gone, handled, inflight, missing }
