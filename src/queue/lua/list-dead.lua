#!lua flags=allow-key-locking
--[[
  list-dead: one page of a topic's dead letters, newest first (failed time,
  then id, both descending), optionally within a failed-time window.

  The cursor is the position of the last letter of the previous page (its
  failed time and id), not an offset: letters that arrive, are replayed,
  deleted or trimmed meanwhile never make a page repeat or skip a letter
  that stays (lib/position.lua).

  KEYS[1]  dead-letter set zset id -> failed ms
  KEYS[2]  dead letters    hash id -> dead-letter entry JSON

  ARGV[1]  cursor score, or "" to start with the newest letter in the window
  ARGV[2]  cursor id ("" with no cursor)
  ARGV[3]  earliest failed time listed, or "-inf"
  ARGV[4]  latest failed time listed, or "+inf"
  ARGV[5]  most letters on the page
  ARGV[6]  most bytes of entries on the page: it ends early past them, always holding one letter

  Returns  { 1 when more letters follow the page else 0, then per letter: id, failed ms, entry JSON }
]]
-- @include position
local rcall = redis.call
local atKey, entriesKey = KEYS[1], KEYS[2]
local limit, byteBudget = tonumber(ARGV[5]), tonumber(ARGV[6])

local lo, hi = rangeBefore(atKey, ARGV[3], ARGV[4], ARGV[1], ARGV[2])
local out = { 0 }
if hi <= lo then return out end
-- One more than the page shows whether more follow.
local first = math.max(lo, hi - limit - 1)
local got = rcall("ZRANGE", atKey, first, hi - 1, "WITHSCORES")
local ids, scores = {}, {}
for i = #got - 1, 1, -2 do
  if #ids == limit then
    out[1] = 1
    break
  end
  ids[#ids + 1] = got[i]
  scores[#scores + 1] = got[i + 1]
end
local entries = rcall("HMGET", entriesKey, unpack(ids))
local bytes = 0
for i = 1, #ids do
  bytes = bytes + (entries[i] and #entries[i] or 0)
  if bytes > byteBudget and i > 1 then
    out[1] = 1
    break
  end
  out[#out + 1] = ids[i]
  out[#out + 1] = scores[i]
  out[#out + 1] = entries[i] or false
end
return out
