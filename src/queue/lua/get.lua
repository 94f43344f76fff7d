#!lua flags=allow-key-locking
--[[
  get: everything known about one job, read in one consistent snapshot.

  KEYS[1]  due zset        id -> due ms
  KEYS[2]  lease zset      id -> lease deadline ms
  KEYS[3]  jobs hash       id -> record JSON
  KEYS[4]  meta hash       id -> {"a":attempts,"d":due ms,"e":last error,"s":claimed ms,"h":history}
  KEYS[5]  done hash of the current retention bucket
  KEYS[6]  done hash of the previous retention bucket
  KEYS[7]  conf hash       topic settings (for the topic's maxAttempts)
  KEYS[8]  dead letters    hash id -> dead-letter entry JSON (a dead job's letter outlives the retention window)

  ARGV[1]  job id

  Returns  { record or false, meta or false, due ms or false, lease deadline or false,
             done record or false, the topic's maxAttempts or false,
             dead-letter entry or false (only when there is neither record nor done record) }
]]
local rcall = redis.call
local id = ARGV[1]
local maxAttempts = rcall("HGET", KEYS[7], "maxAttempts")
local record = rcall("HGET", KEYS[3], id)
if record then
  return { record, rcall("HGET", KEYS[4], id), rcall("ZSCORE", KEYS[1], id), rcall("ZSCORE", KEYS[2], id), false, maxAttempts, false }
end
local done = rcall("HGET", KEYS[5], id) or rcall("HGET", KEYS[6], id)
if done then return { false, false, false, false, done, maxAttempts, false } end
return { false, false, false, false, false, maxAttempts, rcall("HGET", KEYS[8], id) }
