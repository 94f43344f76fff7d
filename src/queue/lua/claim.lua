--[[
  claim: takes due jobs of one topic under a lease.

  First reaps leases that expired (a worker died or hung): each is a failed
  attempt, scheduled again by its backoff policy or, with no attempts left,
  moved to the dead-letter list. Then refills the topic's token bucket and
  takes up to min(max, tokens, concurrency left) jobs that are due, oldest due
  first (ties in enqueue order), moves them to the lease set with a deadline
  and bumps their attempt. Paused topics reap but take nothing.

  KEYS[1]  due zset        id -> due ms
  KEYS[2]  lease zset      id -> lease deadline ms
  KEYS[3]  jobs hash       id -> record JSON
  KEYS[4]  meta hash       id -> {"a":attempts,"d":due ms of the attempt,"e":last error}
  KEYS[5]  conf hash       topic settings
  KEYS[6]  bucket hash     token bucket: t (tokens), ts (ms of last refill)
  KEYS[7]  metrics hash    "dispatched" counter, "total", per-minute ring (lib/metrics.lua)
  KEYS[8]  dead list       dead-letter entries, newest first
  KEYS[9]  done hash       finished-job records of the current retention bucket

  ARGV[1]  now, epoch ms
  ARGV[2]  max jobs to take
  ARGV[3]  lease, ms
  ARGV[4]  seed for the jitter of reaped jobs' backoff
  ARGV[5]  deployment default maxAttempts
  ARGV[6]  deployment default backoff JSON
  ARGV[7]  dead-letter cap
  ARGV[8]  done hash TTL, ms
  ARGV[9]  most expired leases reaped per call

  Returns  { next due ms (-1: none), reaped and retried, reaped and dead, paused (1/0),
             ms until the token bucket holds a whole token (0: not rate-limited now),
             then per job taken: id, attempt, due ms, record JSON }
]]
-- @include records
-- @include metrics
local rcall = redis.call
local dueKey, leaseKey, jobsKey, metaKey, confKey, bucketKey, metricsKey, deadKey, doneKey =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local now = tonumber(ARGV[1])
local max = tonumber(ARGV[2])
local leaseMs = tonumber(ARGV[3])
local defaultMaxAttempts = tonumber(ARGV[5])
local defaultBackoff = ARGV[6]
local deadCap = tonumber(ARGV[7])
local doneTtl = ARGV[8]
local reapLimit = tonumber(ARGV[9])
math.randomseed(tonumber(ARGV[4]))

local function hashToTable(flat)
  local t = {}
  for i = 1, #flat, 2 do t[flat[i]] = flat[i + 1] end
  return t
end

local conf = hashToTable(rcall("HGETALL", confKey))

-- Same formulas as src/queue/policy/backoff.ts (a test holds them equal).
local function backoffDelay(policy, attempt)
  if policy.type == "fixed" then return policy.delay end
  if policy.type == "schedule" then
    local d = policy.delays
    return d[math.min(attempt, #d)]
  end
  local raw = policy.delay * (policy.factor or 2) ^ (attempt - 1)
  local cap = policy.maxDelay or 3600000
  if raw > cap then raw = cap end
  if policy.jitter == false then return math.floor(raw) end
  return math.floor(math.random() * raw)
end

-- 1. Reap expired leases.
local retried, died = 0, 0
local expired = rcall("ZRANGEBYSCORE", leaseKey, "-inf", "(" .. ARGV[1], "LIMIT", 0, reapLimit)
if #expired > 0 then
  local records = rcall("HMGET", jobsKey, unpack(expired))
  local metas = rcall("HMGET", metaKey, unpack(expired))
  local dueArgs, metaArgs, deadEntries, doneArgs, gone = {}, {}, {}, {}, {}
  for i, id in ipairs(expired) do
    local record = records[i]
    gone[#gone + 1] = id
    if record then
      local job = cjson.decode(record)
      local meta = metas[i] and cjson.decode(metas[i]) or { a = 1 }
      local attempts = meta.a
      local maxAttempts = job.maxAttempts or tonumber(conf.maxAttempts) or defaultMaxAttempts
      local err = "lease expired: attempt " .. attempts .. " did not settle in time"
      if attempts >= maxAttempts then
        local e = cjson.encode(err)
        deadEntries[#deadEntries + 1] = deadEntry(id, attempts, e, ARGV[1], record)
        doneArgs[#doneArgs + 1] = id
        doneArgs[#doneArgs + 1] = doneRecord("dead", attempts, e, ARGV[1], record)
        died = died + 1
      else
        local policy = job.backoff or (conf.backoff and cjson.decode(conf.backoff)) or cjson.decode(defaultBackoff)
        local at = now + backoffDelay(policy, attempts)
        dueArgs[#dueArgs + 1] = at
        dueArgs[#dueArgs + 1] = id
        metaArgs[#metaArgs + 1] = id
        metaArgs[#metaArgs + 1] = cjson.encode({ a = attempts, d = at, e = err })
        retried = retried + 1
      end
    end
  end
  rcall("ZREM", leaseKey, unpack(gone))
  if #dueArgs > 0 then writeRetries(dueKey, metaKey, dueArgs, metaArgs) end
  if #deadEntries > 0 then
    local ids = {}
    for i = 1, #doneArgs, 2 do ids[#ids + 1] = doneArgs[i] end
    writeFinished(jobsKey, metaKey, doneKey, doneTtl, ids, doneArgs)
    pushDead(deadKey, deadEntries, deadCap)
  end
  if retried + died > 0 then addMetrics(metricsKey, math.floor(now / 60000), withOutcomes({}, 0, retried, died)) end
end

-- 2. How many may be taken.
local paused = conf.paused == "true"
local take = paused and 0 or max
local concurrency = tonumber(conf.concurrency)
if take > 0 and concurrency and concurrency > 0 then
  take = math.min(take, concurrency - rcall("ZCARD", leaseKey))
end
local rate = tonumber(conf.ratePerSec)
local tokens
if take > 0 and rate and rate > 0 then
  local burst = tonumber(conf.burst) or math.max(1, rate)
  local b = rcall("HMGET", bucketKey, "t", "ts")
  tokens = tonumber(b[1])
  if tokens == nil then
    tokens = burst
  else
    tokens = math.min(burst, tokens + math.max(0, now - tonumber(b[2])) * rate / 1000)
  end
  take = math.min(take, math.floor(tokens))
end

-- 3. Take due jobs.
local out = { -1, retried, died, paused and 1 or 0, 0 }
if take > 0 then
  local due = rcall("ZRANGEBYSCORE", dueKey, "-inf", now, "WITHSCORES", "LIMIT", 0, take)
  if #due > 0 then
    local ids, dues = {}, {}
    for i = 1, #due, 2 do
      ids[#ids + 1] = due[i]
      dues[#dues + 1] = due[i + 1]
    end
    rcall("ZREM", dueKey, unpack(ids))
    local records = rcall("HMGET", jobsKey, unpack(ids))
    local metas = rcall("HMGET", metaKey, unpack(ids))
    local leaseArgs, metaArgs = {}, {}
    local deadline = now + leaseMs
    for i, id in ipairs(ids) do
      -- A due id without a record cannot be delivered; it is dropped, not leased.
      if records[i] then
        local meta = metas[i] and cjson.decode(metas[i]) or { a = 0 }
        local attempt = meta.a + 1
        leaseArgs[#leaseArgs + 1] = deadline
        leaseArgs[#leaseArgs + 1] = id
        metaArgs[#metaArgs + 1] = id
        metaArgs[#metaArgs + 1] = cjson.encode({ a = attempt, d = tonumber(dues[i]), e = meta.e })
        out[#out + 1] = id
        out[#out + 1] = attempt
        out[#out + 1] = dues[i]
        out[#out + 1] = records[i]
      end
    end
    local taken = #leaseArgs / 2
    if taken > 0 then
      rcall("ZADD", leaseKey, unpack(leaseArgs))
      rcall("HSET", metaKey, unpack(metaArgs))
      rcall("HINCRBY", metricsKey, "dispatched", taken)
    end
    if tokens then
      tokens = tokens - taken
      rcall("HSET", bucketKey, "t", tostring(tokens), "ts", now)
    end
  end
end
-- Tell a caller held back by the rate when to come back, so it sleeps instead of spinning.
if tokens and tokens < 1 then out[5] = math.ceil((1 - tokens) * 1000 / rate) end

local nextDue = rcall("ZRANGE", dueKey, 0, 0, "WITHSCORES")
if nextDue[2] then out[1] = nextDue[2] end
return out
