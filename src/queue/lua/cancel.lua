#!lua flags=allow-key-locking
--[[
  cancel: removes a scheduled job (never one in flight) and keeps a
  "cancelled" record, with the attempt history of the job, readable for the
  retention window.

  KEYS[1]  due zset        id -> due ms
  KEYS[2]  lease zset      id -> lease deadline ms
  KEYS[3]  jobs hash       id -> record JSON
  KEYS[4]  meta hash       id -> {"a":attempts,"d":due ms,"e":last error,"s":claimed ms,"h":history}
  KEYS[5]  done hash       finished-job records of the current retention bucket

  ARGV[1]  job id
  ARGV[2]  now, epoch ms
  ARGV[3]  done hash TTL, ms

  Returns  1 cancelled, 0 not scheduled (unknown or finished), -1 in flight
]]
-- @include records
local rcall = redis.call
local dueKey, leaseKey, jobsKey, metaKey, doneKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local id, nowText, doneTtl = ARGV[1], ARGV[2], ARGV[3]

if rcall("ZREM", dueKey, id) == 0 then
  if rcall("ZSCORE", leaseKey, id) then return -1 end
  return 0
end
local record = rcall("HGET", jobsKey, id)
local meta = rcall("HGET", metaKey, id)
local attempts, lastError, history = 0, "null", nil
if meta then
  local m = cjson.decode(meta)
  attempts = m.a
  history = m.h
  if m.e then lastError = cjson.encode(m.e) end
end
local done = doneRecord("cancelled", attempts, lastError, nowText, historyJson(history), record)
writeFinished(jobsKey, metaKey, doneKey, doneTtl, { id }, { id, done })
return 1
