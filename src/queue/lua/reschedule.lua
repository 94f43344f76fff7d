#!lua flags=allow-key-locking
--[[
  reschedule: moves a scheduled job to a new due time (never one in flight),
  lowering its topic's score in the topic index to the new time. It touches
  the topic's sets only, never the job's meta: a scheduled job's due time is
  its score in the due set, or fdue for a keyed job (the meta's "d" is the
  due time of the attempt claimed last, read only while the job is in
  flight); a keyed job's record is read for its flow key and priority.

  KEYS[1]  due zset        id -> due ms
  KEYS[2]  lease zset      id -> lease deadline ms
  KEYS[3]  topic index     zset topic -> when the tick should next look at it (lib/index.lua)
  KEYS[4]  record          string: the job's record JSON, read only for a keyed job (its flow key and priority)
  KEYS[5]  conf hash       topic settings (a keyed job: the topic's priority step)
  KEYS[6..9] fdue, fsched, fready, fkidx of the topic (lib/flow.lua): a keyed job is scheduled again by its key

  ARGV[1]  job id
  ARGV[2]  new due time, epoch ms
  ARGV[3]  topic name

  Returns  1 rescheduled, 0 not scheduled (unknown or finished), -1 in flight
]]
-- @include index
-- @include flow
local rcall = redis.call
local dueKey, leaseKey, indexKey = KEYS[1], KEYS[2], KEYS[3]
local id, due, topic = ARGV[1], ARGV[2], ARGV[3]

-- A keyed job goes back to its key's scheduled set at the new time; a claim moves it to waiting when due.
local keyedDue = rcall("ZSCORE", KEYS[6], id)
if keyedDue then
  local key, priority = unscheduleKeyed(rcall("GET", KEYS[4]), tonumber(keyedDue), KEYS[5], KEYS[7], KEYS[8], KEYS[9], id)
  local keyed = keyedBatch()
  addKeyed(keyed, key, priority, due, id)
  scheduleKeyed(KEYS[6], KEYS[7], KEYS[9], keyed)
  lowerIndex(indexKey, topic, tonumber(due))
  return 1
end

if rcall("ZSCORE", dueKey, id) then
  rcall("ZADD", dueKey, "XX", due, id)
  lowerIndex(indexKey, topic, tonumber(due))
  return 1
end
if rcall("ZSCORE", leaseKey, id) then return -1 end
return 0
