#!lua flags=allow-key-locking
--[[
  list-jobs: one page of a topic's scheduled jobs (the due set, in due order)
  or jobs in flight (the lease set, in lease-deadline order), in the set's
  own order: score, then id. It answers ids and scores only: the caller reads
  the jobs' metas (and records, with payloads) by their keys with
  read-jobs.lua, and bulk cancel (cancel-jobs.lua) pages its due window
  with it.

  The cursor is a position in that order — the score and id of the last job
  of the previous page — not an offset, so jobs enqueued, claimed or trimmed
  meanwhile never make a page repeat or skip a job that stays in the set:
  the page starts right after the position, wherever the set has moved. When
  the job at the position is still there with the same score, that is its
  rank; when it is gone (claimed, cancelled) or moved, the first id after it
  among the jobs of the same score is found by binary search on rank (ids of
  one score are in member order), so a call stays O(log n) probes plus the page.

  KEYS[1]  the set         zset id -> due ms (scheduled) or lease deadline ms (in flight)
  KEYS[2]  optional: a second set of the same order, merged into the page — a shaped
           topic's keyed jobs (fdue, lib/flow.lua) beside its due set: each set is
           paged from the same position, and the page keeps the first ARGV[5] of both
           in (score, id) order, so the cursor walks the two as one set (an empty one,
           a plain topic's fdue, costs one EXISTS)

  ARGV[1]  cursor score, or "" to start at ARGV[3]
  ARGV[2]  cursor id ("" with no cursor)
  ARGV[3]  lowest score listed, or "-inf"
  ARGV[4]  highest score listed, or "+inf"
  ARGV[5]  most jobs on the page

  Returns  { 1 when more jobs follow the page else 0, then per job: id, score }
]]
-- @include position
local setKey = KEYS[1]
local afterScore, afterId, from, to = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local limit = tonumber(ARGV[5])

local start = startRank(setKey, from, afterScore, afterId)
local ids, scores, more = takeFrom(setKey, start, limit, to)
if KEYS[2] and redis.call("EXISTS", KEYS[2]) == 1 then
  local otherIds, otherScores, otherMore = takeFrom(KEYS[2], startRank(KEYS[2], from, afterScore, afterId), limit, to)
  local mergedIds, mergedScores = {}, {}
  local i, j = 1, 1
  while #mergedIds < limit and (i <= #ids or j <= #otherIds) do
    local takeFirst
    if i > #ids then
      takeFirst = false
    elseif j > #otherIds then
      takeFirst = true
    else
      local a, b = tonumber(scores[i]), tonumber(otherScores[j])
      takeFirst = a < b or (a == b and bytesAtMost(ids[i], otherIds[j]))
    end
    if takeFirst then
      mergedIds[#mergedIds + 1], mergedScores[#mergedScores + 1] = ids[i], scores[i]
      i = i + 1
    else
      mergedIds[#mergedIds + 1], mergedScores[#mergedScores + 1] = otherIds[j], otherScores[j]
      j = j + 1
    end
  end
  more = more or otherMore or i <= #ids or j <= #otherIds
  ids, scores = mergedIds, mergedScores
end

local out = { more and 1 or 0 }
for i = 1, #ids do
  out[#out + 1] = ids[i]
  out[#out + 1] = scores[i]
end
return out
