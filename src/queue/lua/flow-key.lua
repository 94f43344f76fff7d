#!lua flags=allow-key-locking
--[[
  flow-key: sets or removes one flow key's own settings (lib/flow.lua) —
  rate, burst, parallelism, weight, paused, maxKeyLength — over its topic's flow
  settings, and marks the topic shaped. Settings with a maxKeyLength mark the
  topic key-capped too (conf "keyCaps", kept until the topic is deleted), so
  enqueues check its keys' caps (enqueue.lua, lib/key-caps.lua). A key parked (paused, or at its
  parallelism) that is not paused now goes back into the calendar at once,
  behind the keys waiting there: the next claim takes its jobs, or parks it
  again if it is still at its parallelism.

  KEYS[1]  conf hash       topic settings ("shaped", "keyCaps")
  KEYS[2]  fkeys hash      flow key -> its settings JSON
  KEYS[3]  fpark zset      flow key -> 1 at its parallelism, 2 paused
  KEYS[4]  fcal zset       flow key -> its turn
  KEYS[5]  topic index     zset topic -> when the tick should next look at it (lib/index.lua)

  ARGV[1]  topic name
  ARGV[2]  the flow key
  ARGV[3]  its settings JSON, or "" to remove them
  ARGV[4]  now, epoch ms
  ARGV[5]  "1" the settings pause the key
  ARGV[6]  "1" the settings hold a maxKeyLength

  Returns  1 set, or removed settings that were there; 0 removed settings that were not there
]]
-- @include index
local rcall = redis.call
local confKey, fkeysKey, fparkKey, fcalKey, indexKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local topic, key, json, now = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local result = 1
if json == "" then
  result = rcall("HDEL", fkeysKey, key)
else
  rcall("HSET", fkeysKey, key, json)
  rcall("HSET", confKey, "shaped", "1")
  if ARGV[6] == "1" then rcall("HSET", confKey, "keyCaps", "1") end
end
if ARGV[5] ~= "1" and rcall("ZSCORE", fparkKey, key) then
  rcall("ZREM", fparkKey, key)
  rcall("ZADD", fcalKey, "NX", now, key)
  lowerIndex(indexKey, topic, now)
end
return result
