#!lua flags=allow-key-locking
--[[
  sweep: drops finished jobs past the retention window and dead letters past
  the topic's cap, each with its two keys (record and meta). The caller
  passes the ids a claim or settle named (claim.lua, settle.lua: a script
  cannot drop keys it was not given) and this call checks each again, so a
  repeat, or an id replayed or re-finished meanwhile, drops nothing it
  should not: a finished job only while its finished time is still past the
  threshold, a dead letter only while it is still among the letters past
  the cap (the oldest).

  KEYS[1]  done set        zset id -> finished ms
  KEYS[2]  dead-letter set zset id -> failed ms
  then per id (ARGV[4…], in order), two keys from KEYS[3]: its record and its meta

  ARGV[1]  threshold, epoch ms: finished jobs whose finished time is at or before it are dropped
  ARGV[2]  dead-letter cap: letters beyond it, oldest first, are dropped
  ARGV[3]  nf: how many of the ids are finished jobs (first); the rest are dead letters
  ARGV[4…] the ids

  Returns  { finished jobs dropped, dead letters dropped }
]]
local rcall = redis.call
local doneKey, deadAtKey = KEYS[1], KEYS[2]
local threshold, cap, nf = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local FIRST_ID, FIRST_KEY = 4, 3
local total = #ARGV - FIRST_ID + 1

local doneIds, deadIds, dropKeys = {}, {}, {}
local function drop(list, c)
  list[#list + 1] = ARGV[FIRST_ID + c - 1]
  dropKeys[#dropKeys + 1] = KEYS[FIRST_KEY + 2 * (c - 1)]
  dropKeys[#dropKeys + 1] = KEYS[FIRST_KEY + 2 * (c - 1) + 1]
end

if nf > 0 then
  local scores = rcall("ZMSCORE", doneKey, unpack(ARGV, FIRST_ID, FIRST_ID + nf - 1))
  for c = 1, nf do
    if scores[c] and tonumber(scores[c]) <= threshold then drop(doneIds, c) end
  end
end

if total > nf then
  local over = rcall("ZCARD", deadAtKey) - cap
  if over > 0 then
    local oldest = {}
    for _, id in ipairs(rcall("ZRANGE", deadAtKey, 0, over - 1)) do oldest[id] = true end
    for c = nf + 1, total do
      if oldest[ARGV[FIRST_ID + c - 1]] then drop(deadIds, c) end
    end
  end
end

-- The ids leave their sets before their keys go: no set ever names a job without its keys.
if #doneIds > 0 then rcall("ZREM", doneKey, unpack(doneIds)) end
if #deadIds > 0 then rcall("ZREM", deadAtKey, unpack(deadIds)) end
if #dropKeys > 0 then rcall("DEL", unpack(dropKeys)) end
return { #doneIds, #deadIds }
