#!lua flags=allow-key-locking
--[[
  list-dead: one page of a topic's dead-letter ids with their failed times,
  newest first (failed time, then id, both descending) or oldest first,
  optionally within a failed-time window. The first phase of every read or
  bulk change of letters: a letter is its job's two keys (src/queue/keys.ts),
  which the caller then hands to read-jobs.lua (a listing), replay-dead.lua
  or purge-dead.lua, each re-checking the ids against the set.

  The cursor is the position of the last letter of the previous page (its
  failed time and id), not an offset: letters that arrive, are replayed,
  deleted or trimmed meanwhile never make a page repeat or skip a letter
  that stays (lib/position.lua).

  KEYS[1]  dead-letter set zset id -> failed ms

  ARGV[1]  cursor score, or "" to start with the newest (oldest) letter in the window
  ARGV[2]  cursor id ("" with no cursor)
  ARGV[3]  earliest failed time listed, or "-inf"
  ARGV[4]  latest failed time listed, or "+inf"
  ARGV[5]  most letters on the page
  ARGV[6]  "newest" first or "oldest" first

  Returns  { 1 when more letters follow the page else 0, then per letter: id, failed ms }
]]
-- @include position
local rcall = redis.call
local atKey = KEYS[1]
local limit = tonumber(ARGV[5])
local out = { 0 }

if ARGV[6] == "oldest" then
  local ids, scores, more = takeFrom(atKey, startRank(atKey, ARGV[3], ARGV[1], ARGV[2]), limit, ARGV[4])
  if more then out[1] = 1 end
  for i = 1, #ids do
    out[#out + 1] = ids[i]
    out[#out + 1] = scores[i]
  end
  return out
end

local lo, hi = rangeBefore(atKey, ARGV[3], ARGV[4], ARGV[1], ARGV[2])
if hi <= lo then return out end
-- One more than the page shows whether more follow.
local first = math.max(lo, hi - limit - 1)
local got = rcall("ZRANGE", atKey, first, hi - 1, "WITHSCORES")
for i = #got - 1, 1, -2 do
  if (#out - 1) / 2 == limit then
    out[1] = 1
    break
  end
  out[#out + 1] = got[i]
  out[#out + 1] = got[i + 1]
end
return out
