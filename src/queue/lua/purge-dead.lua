#!lua flags=allow-key-locking
--[[
  purge-dead: drops dead letters — given ids, or a bounded step of a walk
  over the topic's letters (oldest first, within a failed-time window, whose
  error holds a text; lib/dead.lua).

  KEYS[1]  dead-letter set zset id -> failed ms
  KEYS[2]  dead letters    hash id -> dead-letter entry JSON

  ARGV[1]  most letters looked at by this call
  ARGV[2]  most bytes of entries read by this call (at least one batch of LUA_READ_BATCH is read)
  ARGV[3]  "walk" (ARGV[4…8]) or "ids" (ARGV[4…])
  with "walk":
  ARGV[4]  earliest failed time, or "-inf"
  ARGV[5]  latest failed time, or "+inf"
  ARGV[6]  position score: where the previous call stopped, or "" for the window's start
  ARGV[7]  position id ("" without a position)
  ARGV[8]  text the error must hold, "" for any
  with "ids": the job ids, from ARGV[4] (at most ARGV[1])

  Returns  "walk": { purged, 1 when the window may hold more else 0, position score, position id }
           "ids":  { purged }
]]
-- @include position
-- @include dead
local rcall = redis.call
local atKey, entriesKey = KEYS[1], KEYS[2]
local max, budget, mode = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]

if mode == "walk" then
  local picked, score, id, more = walkDead(atKey, entriesKey, ARGV[4], ARGV[5], ARGV[6], ARGV[7], max, budget, ARGV[8])
  local ids = {}
  for _, p in ipairs(picked) do ids[#ids + 1] = p.id end
  dropDead(atKey, entriesKey, ids)
  return { #ids, more and 1 or 0, score, id }
end

local ids = {}
for i = 4, math.min(#ARGV, 3 + max) do ids[#ids + 1] = ARGV[i] end
if #ids == 0 then return { 0 } end
local purged = rcall("ZREM", atKey, unpack(ids))
rcall("HDEL", entriesKey, unpack(ids))
return { purged }
