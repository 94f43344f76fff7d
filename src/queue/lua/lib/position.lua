--[[
  position: a position in a sorted set's own order (score, then member
  bytes), as listings and bulk operations hand it back in their cursors:
  the score and id of the last job they passed. Included by scripts that
  say `-- @include position`.
]]

-- Whether a sorts before or equal to b byte by byte, as the set orders members
-- (Lua's own < on strings follows the server's collation locale).
local function bytesAtMost(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a <= #b
end

-- The rank of the first job in the set at or after (score, id), and whether
-- that job is the one at the position (still there with the same score).
local function rankAtOrAfter(setKey, score, id)
  local current = redis.call("ZSCORE", setKey, id)
  if current and tonumber(current) == tonumber(score) then return redis.call("ZRANK", setKey, id), true end
  -- Jobs of this score hold ranks [lo, hi); find the first of them whose id sorts after `id`.
  local lo = redis.call("ZCOUNT", setKey, "-inf", "(" .. score)
  local hi = redis.call("ZCOUNT", setKey, "-inf", score)
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local member = redis.call("ZRANGE", setKey, mid, mid)[1]
    if bytesAtMost(member, id) then lo = mid + 1 else hi = mid end
  end
  return lo, false
end

-- The rank of the first job in the set that comes after (score, id).
local function rankAfter(setKey, score, id)
  local rank, present = rankAtOrAfter(setKey, score, id)
  return present and rank + 1 or rank
end

-- The rank a walk over [from, …] starts at: the window's first job, or the
-- first after the position (afterScore, afterId) when one is given (afterScore "" for none).
local function startRank(setKey, from, afterScore, afterId)
  local start = 0
  if from ~= "-inf" then start = redis.call("ZCOUNT", setKey, "-inf", "(" .. from) end
  if afterScore ~= "" then start = math.max(start, rankAfter(setKey, afterScore, afterId)) end
  return start
end

-- The ranks [lo, hi) a walk backwards (newest first) over [from, to] may still
-- visit: below the position (beforeScore, beforeId) when one is given.
local function rangeBefore(setKey, from, to, beforeScore, beforeId)
  local lo = 0
  if from ~= "-inf" then lo = redis.call("ZCOUNT", setKey, "-inf", "(" .. from) end
  local hi = redis.call("ZCOUNT", setKey, "-inf", to)
  if beforeScore ~= "" then hi = math.min(hi, (rankAtOrAfter(setKey, beforeScore, beforeId))) end
  return lo, hi
end

-- Up to `max` members from rank `start` on whose score is at most `to`
-- ("+inf": no bound), their scores, and whether more follow within `to`.
local function takeFrom(setKey, start, max, to)
  -- One more than asked shows whether more follow.
  local got = redis.call("ZRANGE", setKey, start, start + max, "WITHSCORES")
  local high = to ~= "+inf" and tonumber(to) or nil
  local ids, scores = {}, {}
  for i = 1, #got, 2 do
    if high and tonumber(got[i + 1]) > high then return ids, scores, false end
    if #ids == max then return ids, scores, true end
    ids[#ids + 1] = got[i]
    scores[#scores + 1] = got[i + 1]
  end
  return ids, scores, false
end
