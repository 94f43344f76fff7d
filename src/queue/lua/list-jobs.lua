#!lua flags=allow-key-locking
--[[
  list-jobs: one page of a topic's scheduled jobs (the due set, in due order)
  or jobs in flight (the lease set, in lease-deadline order), in the set's
  own order: score, then id.

  The cursor is a position in that order — the score and id of the last job
  of the previous page — not an offset, so jobs enqueued, claimed or trimmed
  meanwhile never make a page repeat or skip a job that stays in the set:
  the page starts right after the position, wherever the set has moved. When
  the job at the position is still there with the same score, that is its
  rank; when it is gone (claimed, cancelled) or moved, the first id after it
  among the jobs of the same score is found by binary search on rank (ids of
  one score are in member order), so a call stays O(log n) probes plus the page.

  KEYS[1]  the set         zset id -> due ms (scheduled) or lease deadline ms (in flight)
  KEYS[2]  jobs hash       id -> record JSON
  KEYS[3]  meta hash       id -> {"a":attempts,"d":due ms,"e":last error,"s":claimed ms,"h":history}

  ARGV[1]  cursor score, or "" to start at ARGV[3]
  ARGV[2]  cursor id ("" with no cursor)
  ARGV[3]  lowest score listed, or "-inf"
  ARGV[4]  highest score listed, or "+inf"
  ARGV[5]  most jobs on the page
  ARGV[6]  "1" to return each job's record (with its payload), "0" not
  ARGV[7]  most bytes of records on the page (with "1"): the page ends early past them, always holding one job

  Returns  { 1 when more jobs follow the page else 0,
             then per job: id, score, meta JSON or false, record JSON or false (with "0": false) }
]]
-- @include position
local rcall = redis.call
local setKey, jobsKey, metaKey = KEYS[1], KEYS[2], KEYS[3]
local afterScore, afterId, from, to = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local limit = tonumber(ARGV[5])
local withRecords = ARGV[6] == "1"
local byteBudget = tonumber(ARGV[7])

local start = startRank(setKey, from, afterScore, afterId)

local ids, scores, more = takeFrom(setKey, start, limit, to)

local out = { more and 1 or 0 }
if #ids == 0 then return out end
local metas = rcall("HMGET", metaKey, unpack(ids))
local records = {}
if withRecords then
  records = rcall("HMGET", jobsKey, unpack(ids))
  local bytes = 0
  for i = 1, #ids do
    bytes = bytes + (records[i] and #records[i] or 0)
    if bytes > byteBudget and i > 1 then
      -- The page ends before the job that passes the budget; the cursor resumes there.
      for j = #ids, i, -1 do ids[j] = nil end
      out[1] = 1
      break
    end
  end
end
for i = 1, #ids do
  out[#out + 1] = ids[i]
  out[#out + 1] = scores[i]
  out[#out + 1] = metas[i] or false
  out[#out + 1] = withRecords and (records[i] or false) or false
end
return out
