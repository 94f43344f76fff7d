#!lua flags=allow-key-locking
--[[
  claim: takes due jobs of one topic under a lease.

  The caller says which kind of consumer it is: the tick ("push") or a pull
  consumer over HTTP ("pull"). A topic of the other mode gives nothing, so a
  pull topic's jobs only ever leave through pull claims, and a push claim
  drops such a topic from the topic index.

  Then reaps leases that expired (a worker died or hung): each is a failed
  attempt, recorded as "expired" in the job's attempt history
  (lib/records.lua), scheduled again by its backoff policy or, with no
  attempts left, moved to the dead-letter list. Then refills the topic's token bucket and
  takes up to min(max, tokens, concurrency left) jobs that are due, oldest due
  first (ties in enqueue order) — and only while the records returned stay
  within CLAIM_REPLY_BUDGET_BYTES (src/limits.ts), always at least one, so the
  reply fits Upstash's 10 MB cap; jobs past the budget stay due, untouched —
  moves them to the lease set with a deadline
  and bumps their attempt, noting when it was claimed (the start of a pull
  consumer's attempt, whose settle does not say). Paused topics reap but take
  nothing. A push claim of a topic with neither a rate limit nor a
  concurrency limit also takes jobs due within the lead (ARGV[14]) — the
  tick starts each at its due time — each leased from its due time. A push claim
  finally writes the topic's exact score in the topic index (lib/index.lua):
  when the tick can next make progress on it, or removes it when never.

  KEYS[1]  due zset        id -> due ms
  KEYS[2]  lease zset      id -> lease deadline ms
  KEYS[3]  jobs hash       id -> record JSON
  KEYS[4]  meta hash       id -> {"a":attempts,"d":due ms of the attempt,"e":last error,"s":claimed ms,"h":history}
  KEYS[5]  conf hash       topic settings
  KEYS[6]  bucket hash     token bucket: t (tokens), ts (ms of last refill)
  KEYS[7]  metrics hash    "dispatched" counter, "total", per-minute ring (lib/metrics.lua)
  KEYS[8]  dead-letter set  zset id -> failed ms
  KEYS[9]  done hash       finished-job records of the current retention bucket
  KEYS[10] topic index     zset topic -> when the tick should next look at it
  KEYS[11] dead letters    hash id -> dead-letter entry JSON

  ARGV[1]  now, epoch ms
  ARGV[2]  max jobs to take
  ARGV[3]  lease, ms; "" for the topic's timeoutMs (else ARGV[12]) plus ARGV[13]
  ARGV[4]  seed for the jitter of reaped jobs' backoff
  ARGV[5]  deployment default maxAttempts
  ARGV[6]  deployment default backoff JSON
  ARGV[7]  dead-letter cap
  ARGV[8]  done hash TTL, ms
  ARGV[9]  most expired leases reaped per call
  ARGV[10] topic name (its member in the topic index)
  ARGV[11] the caller: "push" (the tick) or "pull" (a pull consumer)
  ARGV[12] deployment default timeoutMs
  ARGV[13] lease margin over the timeout, ms
  ARGV[14] lead, ms: a push claim of a topic without limits also takes jobs due up to this long from now ("" or 0: only due ones)

  Returns  { next due ms (-1: none), reaped and retried, reaped and dead, paused (1/0),
             ms until the token bucket holds a whole token (0: not rate-limited now),
             what held jobs back: 0 nothing (or max), 1 concurrency, 2 rate, 3 paused, 4 the topic's mode,
               5 the reply's byte budget (more are takeable now, due or within the lead),
             push claims: the score written to the topic index (-1: removed); pull claims: -1,
             the lease deadline of a job due now, ms (a job taken ahead is leased that much past its due time),
             the conf hash (flat field/value array) for push claims, else an empty array,
             then per job taken: id, attempt, due ms, record JSON }
]]
-- @include records
-- @include metrics
-- @include index
local rcall = redis.call
local dueKey, leaseKey, jobsKey, metaKey, confKey, bucketKey, metricsKey, deadAtKey, doneKey, indexKey, deadEntriesKey =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11]
local now = tonumber(ARGV[1])
local max = tonumber(ARGV[2])
local defaultMaxAttempts = tonumber(ARGV[5])
local defaultBackoff = ARGV[6]
local deadCap = tonumber(ARGV[7])
local doneTtl = ARGV[8]
local reapLimit = tonumber(ARGV[9])
local topic, caller = ARGV[10], ARGV[11]
-- The records one reply carries: well inside Upstash's 10 MB reply cap.
local REPLY_BUDGET = --[[LIMIT:CLAIM_REPLY_BUDGET_BYTES]]4194304
math.randomseed(tonumber(ARGV[4]))

local confFlat = rcall("HGETALL", confKey)
local conf = {}
for i = 1, #confFlat, 2 do conf[confFlat[i]] = confFlat[i + 1] end
local push = caller == "push"
local leaseMs = tonumber(ARGV[3]) or ((tonumber(conf.timeoutMs) or tonumber(ARGV[12])) + tonumber(ARGV[13]))
local deadline = now + leaseMs
local lead = push and tonumber(ARGV[14]) or 0

-- 0. A topic of the other mode gives nothing; the tick forgets a pull topic.
if (conf.mode or "push") ~= caller then
  if push then rcall("ZREM", indexKey, topic) end
  return { -1, 0, 0, conf.paused == "true" and 1 or 0, 0, 4, -1, deadline, {} }
end

-- Same formulas as src/queue/policy/backoff.ts (a test holds them equal).
local function backoffDelay(policy, attempt)
  if policy.type == "fixed" then return policy.delay end
  if policy.type == "schedule" then
    local d = policy.delays
    return d[math.min(attempt, #d)]
  end
  local raw = policy.delay * (policy.factor or --[[LIMIT:DEFAULT_BACKOFF_FACTOR]]2) ^ (attempt - 1)
  local cap = policy.maxDelay or --[[LIMIT:DEFAULT_BACKOFF_MAX_DELAY_MS]]3600000
  if raw > cap then raw = cap end
  if policy.jitter == false then return math.floor(raw) end
  return math.floor(math.random() * raw)
end

-- 1. Reap expired leases.
local retried, died = 0, 0
-- A lease is over at its deadline (the score the topic index gives it).
local expired = rcall("ZRANGEBYSCORE", leaseKey, "-inf", ARGV[1], "LIMIT", 0, reapLimit)
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
      local started = meta.s
      local history = appendAttempt(meta.h, inRun({ n = attempts, t = started, ms = started and math.max(0, now - started), o = "expired", e = err }, meta.h))
      if attempts >= maxAttempts then
        local e = cjson.encode(err)
        local hist = historyJson(history)
        deadEntries[#deadEntries + 1] = deadEntry(id, attempts, e, ARGV[1], hist, record)
        doneArgs[#doneArgs + 1] = id
        doneArgs[#doneArgs + 1] = doneRecord("dead", attempts, e, ARGV[1], hist, record)
        died = died + 1
      else
        local policy = job.backoff or (conf.backoff and cjson.decode(conf.backoff)) or cjson.decode(defaultBackoff)
        local at = now + backoffDelay(policy, attempts)
        dueArgs[#dueArgs + 1] = at
        dueArgs[#dueArgs + 1] = id
        metaArgs[#metaArgs + 1] = id
        metaArgs[#metaArgs + 1] = cjson.encode({ a = attempts, d = at, e = err, h = history })
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
    pushDead(deadAtKey, deadEntriesKey, ids, deadEntries, ARGV[1], deadCap)
  end
  if retried + died > 0 then addMetrics(metricsKey, math.floor(now / 60000), withOutcomes({}, 0, retried, died)) end
end

-- 2. How many may be taken, and what holds the rest back.
local paused = conf.paused == "true"
local take, heldBy = max, 0
if paused then take, heldBy = 0, 3 end
local concurrency = tonumber(conf.concurrency)
if take > 0 and concurrency and concurrency > 0 then
  local free = concurrency - rcall("ZCARD", leaseKey)
  if free < take then take, heldBy = math.max(0, free), 1 end
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
  if math.floor(tokens) < take then take, heldBy = math.floor(tokens), 2 end
end

-- 3. Take due jobs, and without limits those due within the lead: a limit
-- counts jobs as they are taken, so it could not hold for jobs started later.
local horizon = now
if lead > 0 and not paused and not concurrency and not rate then horizon = now + lead end
local out = { -1, retried, died, paused and 1 or 0, 0, 0, -1, deadline, push and confFlat or {} }
local cut = false
if take > 0 then
  local due = rcall("ZRANGEBYSCORE", dueKey, "-inf", horizon, "WITHSCORES", "LIMIT", 0, take)
  local n = #due / 2
  local bytes, gone, leaseArgs, metaArgs = 0, {}, {}, {}
  if n > 0 then
    -- One read of the records and one of the metadata, as ever: a claim costs no more commands for its budget.
    local ids, dues = {}, {}
    for i = 1, n do
      ids[i] = due[2 * i - 1]
      dues[i] = due[2 * i]
    end
    local records = rcall("HMGET", jobsKey, unpack(ids))
    local metas = rcall("HMGET", metaKey, unpack(ids))
    for i, id in ipairs(ids) do
      local record = records[i]
      -- A due id without a record cannot be delivered; it is dropped, not leased.
      if record then
        -- The reply stays within the budget, save a lone job larger than it; the rest stay due, untouched.
        if #leaseArgs > 0 and bytes + #record > REPLY_BUDGET then
          cut = true
          break
        end
        bytes = bytes + #record
        local meta = metas[i] and cjson.decode(metas[i]) or { a = 0 }
        local attempt = meta.a + 1
        -- A job taken ahead starts at its due time: its attempt and its lease count from then.
        local start = math.max(now, tonumber(dues[i]))
        meta.a, meta.d, meta.s = attempt, tonumber(dues[i]), start
        leaseArgs[#leaseArgs + 1] = start + leaseMs
        leaseArgs[#leaseArgs + 1] = id
        metaArgs[#metaArgs + 1] = id
        metaArgs[#metaArgs + 1] = cjson.encode(meta)
        out[#out + 1] = id
        out[#out + 1] = attempt
        out[#out + 1] = dues[i]
        out[#out + 1] = record
      end
      gone[#gone + 1] = id
    end
  end
  if #gone > 0 then rcall("ZREM", dueKey, unpack(gone)) end
  local taken = #leaseArgs / 2
  if taken > 0 then
    rcall("ZADD", leaseKey, unpack(leaseArgs))
    rcall("HSET", metaKey, unpack(metaArgs))
    rcall("HINCRBY", metricsKey, "dispatched", taken)
  end
  if tokens and n > 0 then
    tokens = tokens - taken
    rcall("HSET", bucketKey, "t", tostring(tokens), "ts", now)
  end
end
-- Tell a caller held back by the rate when to come back, so it sleeps instead of spinning.
local tokenInMs = 0
if tokens and tokens < 1 then tokenInMs = math.ceil((1 - tokens) * 1000 / rate) end
out[5] = tokenInMs

local nextDue = earliestScore(dueKey)
if nextDue then out[1] = nextDue end
local ready = nextDue ~= nil and nextDue <= now
-- Cut by the reply's budget: more are takeable now, whether due or within the lead.
if cut then heldBy = 5 end
if ready or cut then out[6] = heldBy end
-- Within the horizon: a claim now could take it.
local takeable = nextDue ~= nil and nextDue <= horizon

-- 4. The tick's next look at this topic (push claims only).
if push then
  local look = earliestScore(leaseKey)
  local function sooner(t)
    if look == nil or t < look then look = t end
  end
  if nextDue and not paused then
    if not takeable then
      -- The lead before it: when a claim takes it ahead (none does for a topic with limits).
      sooner(nextDue - (horizon - now))
    elseif not ready then
      -- Takeable ahead, yet not taken: more was within the horizon than this claim took.
      sooner(now)
    elseif heldBy == 2 then
      sooner(now + tokenInMs)
    elseif heldBy ~= 1 then
      -- More is ready than this claim took: look again at once.
      sooner(now)
    end
    -- Held back by concurrency: the settle that frees a slot lowers the score.
  end
  if look then
    rcall("ZADD", indexKey, look, topic)
    out[7] = look
  else
    rcall("ZREM", indexKey, topic)
  end
end
return out
