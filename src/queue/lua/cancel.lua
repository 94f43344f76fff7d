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

  ARGV[1]  job id
  ARGV[2]  now, epoch ms

  Returns  1 cancelled, 0 not scheduled (unknown or finished), -1 in flight
]]
-- @include records
local rcall = redis.call
local dueKey, leaseKey, doneKey, metaKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local id, nowText = ARGV[1], ARGV[2]

if not rcall("ZSCORE", dueKey, id) then
  if rcall("ZSCORE", leaseKey, id) then return -1 end
  return 0
end
writeFinished(doneKey, nowText, { id }, { metaKey, finishPending("cancelled", rcall("GET", metaKey), nowText) })
rcall("ZREM", dueKey, id)
return 1
