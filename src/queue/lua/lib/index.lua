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
