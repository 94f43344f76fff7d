--[[
  configure-topic: sets and clears a topic's settings and registers the topic.

  KEYS[1]  conf hash       topic settings
  KEYS[2]  topics set      active-topic registry
  KEYS[3]  bucket hash     token bucket (reset when the rate or burst changes)

  ARGV[1]  topic name
  ARGV[2]  n, the number of fields to set
  ARGV[3 … 2+2n]  field, value pairs to set
  ARGV[3+2n …]    fields to clear

  Returns  1
]]
local rcall = redis.call
local confKey, topicsKey, bucketKey = KEYS[1], KEYS[2], KEYS[3]
local n = tonumber(ARGV[2])
local set, clear, resetBucket = {}, {}, false
for i = 3, 2 + 2 * n do set[#set + 1] = ARGV[i] end
for i = 3 + 2 * n, #ARGV do clear[#clear + 1] = ARGV[i] end
for i = 1, #set, 2 do
  if set[i] == "ratePerSec" or set[i] == "burst" then resetBucket = true end
end
for _, f in ipairs(clear) do
  if f == "ratePerSec" or f == "burst" then resetBucket = true end
end
if #set > 0 then rcall("HSET", confKey, unpack(set)) end
if #clear > 0 then rcall("HDEL", confKey, unpack(clear)) end
if resetBucket then rcall("DEL", bucketKey) end
rcall("SADD", topicsKey, ARGV[1])
return 1
