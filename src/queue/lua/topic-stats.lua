#!lua flags=allow-key-locking
--[[
  topic-stats: a consistent snapshot of one topic's settings, backlog and
  counters. Counts only: no job's keys are read (a dead letter is its job's
  two keys, counted by its id in the dead-letter set).

  KEYS[1]  due zset        id -> due ms
  KEYS[2]  lease zset      id -> lease deadline ms
  KEYS[3]  dead-letter set zset id -> failed ms
  KEYS[4]  conf hash       topic settings
  KEYS[5]  metrics hash    "dispatched", "dropped" and "expired" counters, "total" metrics vector (lib/metrics.lua)
  KEYS[6]  fdue zset       keyed jobs scheduled or waiting: id -> due ms (lib/flow.lua), pending as the due set's are
  KEYS[7]  fcal zset       flow key -> its turn (lib/flow.lua)
  KEYS[8]  fpark zset      flow key -> 1 at its parallelism, 2 paused

  ARGV[1]  now, epoch ms

  Returns  { scheduled (pending: lib/pending.lua), ready now, in flight, dead letters, conf (flat field/value array),
             { dispatched or false, dropped or false, total vector JSON or false, expired or false }, oldest ready due ms or false,
             a shaped topic's keys: { in their turn, waiting for their rate, at their parallelism, paused }
               (counted only when the conf says shaped; else an empty array) }
]]
-- @include pending
local rcall = redis.call
local conf = rcall("HGETALL", KEYS[4])
local keys = {}
for i = 1, #conf, 2 do
  if conf[i] == "shaped" then
    keys = {
      -- A key just served waits a fraction of a millisecond behind the others: still in its turn.
      rcall("ZCOUNT", KEYS[7], "-inf", tonumber(ARGV[1]) + 1),
      rcall("ZCOUNT", KEYS[7], "(" .. (tonumber(ARGV[1]) + 1), "+inf"),
      rcall("ZCOUNT", KEYS[8], 1, 1),
      rcall("ZCOUNT", KEYS[8], 2, 2),
    }
  end
end
local oldest = rcall("ZRANGE", KEYS[1], 0, 0, "WITHSCORES")
local keyedOldest = rcall("ZRANGE", KEYS[6], 0, 0, "WITHSCORES")
if keyedOldest[2] and (not oldest[2] or tonumber(keyedOldest[2]) < tonumber(oldest[2])) then oldest = keyedOldest end
return {
  pendingCount(KEYS[1], KEYS[6]),
  rcall("ZCOUNT", KEYS[1], "-inf", ARGV[1]) + rcall("ZCOUNT", KEYS[6], "-inf", ARGV[1]),
  rcall("ZCARD", KEYS[2]),
  rcall("ZCARD", KEYS[3]),
  conf,
  rcall("HMGET", KEYS[5], "dispatched", "dropped", "total", "expired"),
  oldest[2] or false,
  keys,
}
