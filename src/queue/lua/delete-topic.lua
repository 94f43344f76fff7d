#!lua flags=allow-key-locking
--[[
  delete-topic: removes a topic with everything it holds — its settings,
  token bucket, metrics, dead letters, its place in the registry, the topic
  index and the parked set — but only when it is empty: nothing in flight,
  and (unless purging) nothing scheduled and no dead letters. Purging drops
  scheduled jobs, then dead letters, at most ARGV[3] per call, so no call
  holds Redis for long; the caller repeats the call until it answers 1.
  Each purging call marks the topic purged now (KEYS[14], kept for the
  idempotency window): enqueue.lua then treats the idempotency keys of jobs
  made before the mark that are gone as free, so purging touches no key of them.

  KEYS[1]  due zset        id -> due ms
  KEYS[2]  lease zset      id -> lease deadline ms
  KEYS[3]  dead-letter set zset id -> failed ms
  KEYS[4]  conf hash       topic settings
  KEYS[5]  bucket hash     token bucket
  KEYS[6]  metrics hash    counters, metrics vectors, per-minute series
  KEYS[7]  jobs hash       id -> record JSON
  KEYS[8]  meta hash       id -> {"a":attempts,"d":due ms,"e":last error,"s":claimed ms,"h":history}
  KEYS[9]  topics set      topic registry
  KEYS[10] topic index     zset topic -> when the tick should next look at it
  KEYS[11] parked set      topics that are pull or paused
  KEYS[12] dead letters    hash id -> dead-letter entry JSON
  KEYS[13] old dead list   dead letters of earlier versions not yet moved (migrate-dead.lua)
  KEYS[14] purge mark      string: ms of the topic's last purge

  ARGV[1]  topic name
  ARGV[2]  "1" to purge scheduled jobs and dead letters, "0" to refuse a topic that holds any
  ARGV[3]  most scheduled jobs (or dead letters) dropped per call
  ARGV[4]  now, ms (the purge mark)
  ARGV[5]  idempotency window, ms (how long the purge mark is kept)

  Returns  { code, scheduled jobs dropped by this call, dead letters dropped by this call,
             scheduled jobs, in flight, dead letters (as found) }
           code: 1 deleted, 0 purging goes on (call again), -1 jobs in flight, -2 not empty
]]
local rcall = redis.call
local dueKey, leaseKey, deadKey = KEYS[1], KEYS[2], KEYS[3]
local purge, batch = ARGV[2] == "1", tonumber(ARGV[3])
local scheduled, inflight = rcall("ZCARD", dueKey), rcall("ZCARD", leaseKey)
local dead = rcall("ZCARD", deadKey) + rcall("LLEN", KEYS[13])
if inflight > 0 then return { -1, 0, 0, scheduled, inflight, dead } end
if not purge and (scheduled > 0 or dead > 0) then return { -2, 0, 0, scheduled, inflight, dead } end
if purge then rcall("SET", KEYS[14], ARGV[4], "PX", ARGV[5]) end

local dropped = 0
if scheduled > 0 then
  local ids = rcall("ZRANGE", dueKey, 0, batch - 1)
  rcall("ZREM", dueKey, unpack(ids))
  rcall("HDEL", KEYS[7], unpack(ids))
  rcall("HDEL", KEYS[8], unpack(ids))
  dropped = #ids
  if dropped < scheduled then return { 0, dropped, 0, scheduled, inflight, dead } end
end
local droppedDead = 0
local letters = rcall("ZRANGE", deadKey, 0, batch - 1)
if #letters > 0 then
  rcall("ZREM", deadKey, unpack(letters))
  rcall("HDEL", KEYS[12], unpack(letters))
  droppedDead = #letters
  if rcall("ZCARD", deadKey) > 0 then return { 0, dropped, droppedDead, scheduled, inflight, dead } end
end
-- The old list is capped like the letters were; its length is counted, and it goes in one DEL.
droppedDead = droppedDead + rcall("LLEN", KEYS[13])
rcall("DEL", dueKey, leaseKey, deadKey, KEYS[4], KEYS[5], KEYS[6], KEYS[12], KEYS[13])
rcall("SREM", KEYS[9], ARGV[1])
rcall("ZREM", KEYS[10], ARGV[1])
rcall("SREM", KEYS[11], ARGV[1])
return { 1, dropped, droppedDead, scheduled, inflight, dead }
