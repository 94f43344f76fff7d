#!lua flags=allow-key-locking
--[[
  reschedule: moves a scheduled job to a new due time (never one in flight),
  lowering its topic's score in the topic index to the new time. It touches
  the topic's sets only, never the job's keys: a scheduled job's due time is
  its score in the due set (the meta's "d" is the due time of the attempt
  claimed last, read only while the job is in flight).

  KEYS[1]  due zset        id -> due ms
  KEYS[2]  lease zset      id -> lease deadline ms
  KEYS[3]  topic index     zset topic -> when the tick should next look at it (lib/index.lua)

  ARGV[1]  job id
  ARGV[2]  new due time, epoch ms
  ARGV[3]  topic name

  Returns  1 rescheduled, 0 not scheduled (unknown or finished), -1 in flight
]]
-- @include index
local rcall = redis.call
local dueKey, leaseKey, indexKey = KEYS[1], KEYS[2], KEYS[3]
local id, due, topic = ARGV[1], ARGV[2], ARGV[3]

if rcall("ZSCORE", dueKey, id) then
  rcall("ZADD", dueKey, "XX", due, id)
  lowerIndex(indexKey, topic, tonumber(due))
  return 1
end
if rcall("ZSCORE", leaseKey, id) then return -1 end
return 0
