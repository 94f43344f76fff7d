#!lua flags=allow-key-locking
--[[
  schedule-fire: stores the job of one occurrence for each given schedule and
  advances the schedule past it, fenced: schedule i fires only if it is still
  at the revision and the next occurrence the tick read (ARGV), so whatever
  runs twice or races — overlapping ticks, a retry after a lost answer, an
  upsert or pause in between — at most one job is stored per occurrence.
  A job is stored as enqueue.lua stores one: its record in its own key (its
  meta is written at its first claim) and its id in its topic's due set.
  Each job lowers its topic's index score (lib/index.lua); the index member
  "~schedules" ends up at the earliest due occurrence left.

  KEYS[1]        schedule states   hash id -> state JSON {rev, next, ...}
  KEYS[2]        schedules due     zset id -> next occurrence ms
  KEYS[3]        topic index       zset topic -> when the tick should next look at it
  KEYS[4]        topics set        topic registry
  then for schedule i (i = 1..n), two keys from KEYS[5 + 2(i-1)]:
                 the due zset of its job's topic (id -> due ms),
                 its job's record key (string: job record JSON; src/queue/keys.ts)

  ARGV[1]        n, the number of schedules
  then for schedule i, eight values from ARGV[2 + 8(i-1)]:
                 schedule id, revision read, next occurrence read (ms),
                 job id (minted by the caller; its record key is given in KEYS),
                 job record JSON, job due time (the occurrence it is for, ms),
                 new state JSON, new next occurrence ms or "" (ended)
  (the topic of schedule i's job is the part of its job id before the last ".")

  Returns        { fired_1, …, fired_n, earliest due occurrence left (-1: none) },
                 fired_i 1 stored, 0 fenced off (changed, paused or deleted since it was read)
]]
-- @include index
local rcall = redis.call
local n = tonumber(ARGV[1])
local out = {}
for i = 1, n do
  local a = 2 + 8 * (i - 1)
  local id, rev, expected = ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local current = rcall("HGET", KEYS[1], id)
  local s = current and cjson.decode(current)
  if s and tonumber(s.rev) == rev and tonumber(s.next) == expected and not s.paused then
    local jobId, due = ARGV[a + 3], ARGV[a + 5]
    local topic = string.match(jobId, "^(.*)%.[^.]+$")
    local k = 5 + 2 * (i - 1)
    rcall("SET", KEYS[k + 1], ARGV[a + 4])
    rcall("ZADD", KEYS[k], due, jobId)
    lowerIndex(KEYS[3], topic, tonumber(due))
    rcall("SADD", KEYS[4], topic)
    rcall("HSET", KEYS[1], id, ARGV[a + 6])
    if ARGV[a + 7] ~= "" then
      rcall("ZADD", KEYS[2], ARGV[a + 7], id)
    else
      rcall("ZREM", KEYS[2], id)
    end
    out[i] = 1
  else
    out[i] = 0
  end
end
out[n + 1] = indexSchedules(KEYS[3], KEYS[2])
return out
