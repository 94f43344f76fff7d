#!lua flags=allow-key-locking
--[[
  topic-stats: a consistent snapshot of one topic's settings, backlog and
  counters. Counts only: no job's keys are read (a dead letter is its job's
  two keys, counted by its id in the dead-letter set).

  KEYS[1]  due zset        id -> due ms
  KEYS[2]  lease zset      id -> lease deadline ms
  KEYS[3]  dead-letter set zset id -> failed ms
  KEYS[4]  conf hash       topic settings
  KEYS[5]  metrics hash    "dispatched" and "dropped" counters, "total" metrics vector (lib/metrics.lua)

  ARGV[1]  now, epoch ms

  Returns  { scheduled (pending: lib/pending.lua), ready now, in flight, dead letters, conf (flat field/value array),
             { dispatched or false, dropped or false, total vector JSON or false }, oldest ready due ms or false }
]]
-- @include pending
local rcall = redis.call
local oldest = rcall("ZRANGE", KEYS[1], 0, 0, "WITHSCORES")
return {
  pendingCount(KEYS[1]),
  rcall("ZCOUNT", KEYS[1], "-inf", ARGV[1]),
  rcall("ZCARD", KEYS[2]),
  rcall("ZCARD", KEYS[3]),
  rcall("HGETALL", KEYS[4]),
  rcall("HMGET", KEYS[5], "dispatched", "dropped", "total"),
  oldest[2] or false,
}
