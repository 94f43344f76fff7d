#!lua flags=allow-key-locking
--[[
  configure-topic: sets and clears a topic's settings and registers the topic.
  A topic that is push and not paused afterwards gets its score in the topic
  index lowered to its earliest due job (a shaped topic's keyed jobs and keys'
  turns too: lib/flow.lua) or lease deadline, so a resume, a
  switch to push or a new rate takes effect at the tick's next look (a paused
  or pull topic is dropped from the index by the tick's next claim of it).
  Pull and paused topics are kept in the parked set, which the tick samples
  for the per-minute backlog series.

  KEYS[1]  conf hash       topic settings
  KEYS[2]  topics set      topic registry
  KEYS[3]  bucket hash     token bucket (reset when the rate or burst changes)
  KEYS[4]  topic index     zset topic -> when the tick should next look at it (lib/index.lua)
  KEYS[5]  parked set      topics that are pull or paused
  KEYS[6]  due zset        id -> due ms
  KEYS[7]  lease zset      id -> lease deadline ms
  KEYS[8]  fsched zset     a shaped topic's keyed jobs not yet due (lib/flow.lua)
  KEYS[9]  fcal zset       a shaped topic's keys' turns (lib/flow.lua)

  ARGV[1]  topic name
  ARGV[2]  most topics the registry may hold
  ARGV[3]  n, the number of fields to set
  ARGV[4 … 3+2n]  field, value pairs to set
  ARGV[4+2n …]    fields to clear

  Returns  1 written, or -1 when registering the topic would pass the cap (nothing changed)
]]
-- @include index
local rcall = redis.call
local confKey, topicsKey, bucketKey, indexKey, parkedKey, dueKey, leaseKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local topic = ARGV[1]
if rcall("SISMEMBER", topicsKey, topic) == 0 and rcall("SCARD", topicsKey) >= tonumber(ARGV[2]) then return -1 end
local n = tonumber(ARGV[3])
local set, clear, resetBucket = {}, {}, false
for i = 4, 3 + 2 * n do set[#set + 1] = ARGV[i] end
for i = 4 + 2 * n, #ARGV do clear[#clear + 1] = ARGV[i] end
for i = 1, #set, 2 do
  if set[i] == "ratePerSec" or set[i] == "burst" then resetBucket = true end
end
for _, f in ipairs(clear) do
  if f == "ratePerSec" or f == "burst" then resetBucket = true end
end
if #set > 0 then rcall("HSET", confKey, unpack(set)) end
if #clear > 0 then rcall("HDEL", confKey, unpack(clear)) end
if resetBucket then rcall("DEL", bucketKey) end
rcall("SADD", topicsKey, topic)

local state = rcall("HMGET", confKey, "mode", "paused")
if state[1] == "pull" or state[2] == "true" then
  rcall("SADD", parkedKey, topic)
else
  rcall("SREM", parkedKey, topic)
  local first
  for _, key in ipairs({ dueKey, leaseKey, KEYS[8], KEYS[9] }) do
    local t = earliestScore(key)
    if t and (first == nil or t < first) then first = t end
  end
  if first then lowerIndex(indexKey, topic, first) end
end
return 1
