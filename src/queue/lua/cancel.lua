#!lua flags=allow-key-locking
--[[
  cancel: cancels a scheduled job (never one in flight): its meta becomes a
  finished one, state "cancelled", with its attempts, last error and attempt
  history, and its id goes into the topic's done set, where it stays
  readable until sweep.lua drops it past the retention window. The record is
  left untouched. Writes first, then the job leaves the due set.

  KEYS[1]  due zset        id -> due ms
  KEYS[2]  lease zset      id -> lease deadline ms
  KEYS[3]  done zset       finished jobs: id -> finished ms
  KEYS[4]  meta            string: the job's meta JSON (lib/records.lua; absent before its first claim)
  KEYS[5]  record          string: the job's record JSON, read only for a keyed job (its flow key and priority)
  KEYS[6]  conf hash       topic settings (a keyed job: the topic's priority step)
  KEYS[7..10] fdue, fsched, fready, fkidx of the topic (lib/flow.lua): a keyed job leaves them
  KEYS[11] exp zset        jobs with an expiry -> expiresAt (lib/expire.lua): the job leaves it

  ARGV[1]  job id
  ARGV[2]  now, epoch ms

  Returns  1 cancelled, 0 not scheduled (unknown or finished), -1 in flight
]]
-- @include records
-- @include flow
local rcall = redis.call
local dueKey, leaseKey, doneKey, metaKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local id, nowText = ARGV[1], ARGV[2]

local keyedDue = not rcall("ZSCORE", dueKey, id) and rcall("ZSCORE", KEYS[7], id)
if not keyedDue and not rcall("ZSCORE", dueKey, id) then
  if rcall("ZSCORE", leaseKey, id) then return -1 end
  return 0
end
writeFinished(doneKey, nowText, { id }, { metaKey, finishPending("cancelled", rcall("GET", metaKey), nowText) })
if keyedDue then
  rcall("ZREM", KEYS[7], id)
  unscheduleKeyed(rcall("GET", KEYS[5]), tonumber(keyedDue), KEYS[6], KEYS[8], KEYS[9], KEYS[10], id)
else
  rcall("ZREM", dueKey, id)
end
rcall("ZREM", KEYS[11], id)
return 1
