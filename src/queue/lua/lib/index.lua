--[[
  index: the topic index, one sorted set of topics scored by when the tick
  should next look at each. Its invariant: every push topic that is not
  paused and holds a scheduled or leased job is in the index with a score no
  later than the first moment the tick can make progress on it (its earliest
  due job the topic's limits let start, or its earliest lease deadline).
  Scripts that add work only lower a score (ZADD LT); only a push claim,
  which sees the topic's limits, writes an exact score or removes the topic.
  A score that is too early costs the tick one claim that finds nothing, and
  that claim corrects it. Included by scripts that say `-- @include index`.

  Schedules have one member of their own, "~schedules" (no topic name can
  hold "~"): its score is exactly the earliest next occurrence among the
  schedules that are due to fire (not paused, not ended), and it is absent
  when there is none. Every script that changes the schedules' due set
  rewrites it from that set's head (indexSchedules), so the tick wakes for a
  schedule as it does for a topic, at no cost per schedule.
]]

-- The earliest score in a sorted set, or nil when it is empty.
local function earliestScore(key)
  local first = redis.call("ZRANGE", key, 0, 0, "WITHSCORES")
  return first[2] and tonumber(first[2]) or nil
end

-- Makes sure the tick looks at `topic` no later than `at` (epoch ms).
local function lowerIndex(indexKey, topic, at)
  redis.call("ZADD", indexKey, "LT", at, topic)
end

-- The index member of the schedules (see above).
local SCHEDULES = "~schedules"

-- Sets the schedules' index member from the schedules' due set; returns its score, or -1 when none is due.
local function indexSchedules(indexKey, schedulesDueKey)
  local head = earliestScore(schedulesDueKey)
  if head then
    redis.call("ZADD", indexKey, head, SCHEDULES)
    return head
  end
  redis.call("ZREM", indexKey, SCHEDULES)
  return -1
end
