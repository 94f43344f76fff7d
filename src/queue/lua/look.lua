#!lua flags=allow-key-locking
--[[
  look: a cron invocation's first step while the tick has ended idle. Records
  the heartbeat and reads, in one request and three commands, what decides
  whether a loop must run this minute: whether one runs, the sleep mark, and
  the earliest score of the topic index (jobs, retries, leases, schedules).

  KEYS[1]  heartbeat    STRING epoch ms of the latest scheduled() start
  KEYS[2]  tick lock    STRING owner token of the running loop, expires
  KEYS[3]  sleep mark   STRING "1" a loop sleeps (looks every TICK_IDLE_PEEK_MS),
                        "c" no loop runs: the next cron looks (src/tick/sleep-mark.ts)
  KEYS[4]  topic index  zset topic -> when the tick should next look at it

  ARGV[1]  heartbeat, epoch ms

  Returns  { lock: 1 held, 0 free; the sleep mark or ""; the index's earliest score (-1: none) }
]]
local rcall = redis.call
rcall("SET", KEYS[1], ARGV[1])
local held = rcall("MGET", KEYS[2], KEYS[3])
local head = rcall("ZRANGE", KEYS[4], 0, 0, "WITHSCORES")
return { held[1] and 1 or 0, held[2] or "", head[2] or -1 }
