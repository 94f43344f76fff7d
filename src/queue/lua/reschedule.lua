--[[
  reschedule: moves a scheduled job to a new due time (never one in flight).

  KEYS[1]  due zset        id -> due ms
  KEYS[2]  lease zset      id -> lease deadline ms

  ARGV[1]  job id
  ARGV[2]  new due time, epoch ms

  Returns  1 rescheduled, 0 not scheduled (unknown or finished), -1 in flight
]]
local rcall = redis.call
local dueKey, leaseKey = KEYS[1], KEYS[2]
local id, due = ARGV[1], ARGV[2]

if rcall("ZSCORE", dueKey, id) then
  rcall("ZADD", dueKey, "XX", due, id)
  return 1
end
if rcall("ZSCORE", leaseKey, id) then return -1 end
return 0
