--[[
  metrics: adds a metrics vector to a topic's all-time total and to the slot
  of its minute in the 24 h ring (src/queue/metrics.ts says what each element
  means; here they are only added). A slot still holding an older minute is
  started afresh, so the ring needs no trimming and its memory stays bounded.
  Two commands, whatever the vector holds: metrics cost per chunk, not per job.
  Included by scripts that say `-- @include metrics`.
]]

-- delta: array of numbers; minute: floor(epoch ms / 60,000).
local function addMetrics(metricsKey, minute, delta)
  local slot = "m" .. (minute % --[[LIMIT:SERIES_MINUTES]]1440)
  local stored = redis.call("HMGET", metricsKey, "total", slot)
  local total = stored[1] and cjson.decode(stored[1]) or {}
  local series = stored[2] and cjson.decode(stored[2]) or nil
  if not series or series[1] ~= minute then series = { minute } end
  for i = 1, #delta do
    total[i] = (total[i] or 0) + delta[i]
    series[i + 1] = (series[i + 1] or 0) + delta[i]
  end
  redis.call("HSET", metricsKey, "total", cjson.encode(total), slot, cjson.encode(series))
end

-- The outcome counters as the first three elements of a vector (succeeded, retried, dead).
local function withOutcomes(delta, succeeded, retried, dead)
  delta[1] = (delta[1] or 0) + succeeded
  delta[2] = (delta[2] or 0) + retried
  delta[3] = (delta[3] or 0) + dead
  return delta
end
