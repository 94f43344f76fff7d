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
  concurrency limit (nor flow keys, nor job keys: conf "jobKeys", upsert.lua)
  also takes jobs due within the lead (ARGV[14]) — the tick starts each at
  its due time — each leased from its due time. A push claim
  finally writes the topic's exact score in the topic index (lib/index.lua):
  when the tick can next make progress on it, or removes it when never.

  The claim takes and reaps only ids its caller read from the due and lease
  sets just before (KEYS holds their record and meta keys: a script cannot
  read keys it was not given). It checks each against the set (ZMSCORE), so
  ids that moved meanwhile are skipped; jobs that became due meanwhile wait
  for the next claim, which the reply's heldBy and index score ask for. A due
  id without a record is left due and returned as an orphan (a job the hash
  model's code stored after the migration: the caller moves it, or drops it).
  Finished jobs past the retention window and dead letters past the cap are
  returned for the caller to sweep (sweep.lua), and a push claim keeps a
  topic with finished jobs in the index until they are swept.

  KEYS[1]  due zset        id -> due ms
  KEYS[2]  lease zset      id -> lease deadline ms
  KEYS[3]  conf hash       topic settings
  KEYS[4]  bucket hash     token bucket: t (tokens), ts (ms of last refill)
  KEYS[5]  metrics hash    "dispatched" counter, "total", per-minute ring (lib/metrics.lua)
  KEYS[6]  dead-letter set zset id -> failed ms
  KEYS[7]  done set        zset id -> finished ms
  KEYS[8]  topic index     zset topic -> when the tick should next look at it
  KEYS[9]  exp zset        pending never-started jobs that carry an expiry: id -> expiresAt ms (lib/expire.lua)
  then per candidate id (the ARGV[23…] ids, in order), two keys from KEYS[10]:
           its record (string, record JSON) and its meta (string, lib/records.lua)

  ARGV[1]  now, epoch ms
  ARGV[2]  max jobs to take
  ARGV[3]  lease, ms; "" for the topic's timeoutMs (else ARGV[12]) plus ARGV[13]
  ARGV[4]  seed for the jitter of reaped jobs' backoff
  ARGV[5]  deployment default maxAttempts
  ARGV[6]  deployment default backoff JSON
  ARGV[7]  dead-letter cap
  ARGV[8]  retention, ms: finished jobs older than this are returned for sweeping
  ARGV[9]  most expired leases reaped per call
  ARGV[10] topic name (its member in the topic index)
  ARGV[11] the caller: "push" (the tick) or "pull" (a pull consumer)
  ARGV[12] deployment default timeoutMs
  ARGV[13] lease margin over the timeout, ms
  ARGV[14] lead, ms: a push claim of a topic without limits also takes jobs due up to this long from now ("" or 0: only due ones)
  ARGV[15] nd: how many candidate ids were read from the due set (first), oldest due first
  ARGV[16] nl: how many candidate ids were read from the lease set (after them), with an expired lease
  ARGV[17] "1": a claim of a shaped topic, with flow-read.lua's reading (below); else a plain one,
           which takes nothing from a shaped topic (held back by 6)
  ARGV[18] ne: how many jobs of served keys follow the candidates, five values each
  ARGV[19] np: how many newly due keyed jobs follow them, four values each
  ARGV[20] nk: how many served keys follow them, two values each
  ARGV[21] the rounds of turns this claim gives the served keys (flow-read.lua; fewer when it can take fewer jobs than
           it asked for): a key's turn is its weight times them
  ARGV[22] nx: how many candidate ids were read from the exp set (after the lease candidates), past their expiresAt
  ARGV[23…] the nd due candidates, then the nl lease candidates, then the nx expiring ones; then, for a shaped topic, as
           flow-read.lua named them: the jobs (key, id, priority, due, source), the newly due
           (key, priority, id, due), the keys served in turn order (key, 1 in the calendar / 0 newly ready)

  Expiry (lib/expire.lua, lib/claim-expire.lua): a topic marked "expiring"
  (conf: it has had jobs with an expiresAt) has the nx candidates past their
  expiresAt ended as expired, whatever its mode and even when paused (a push
  claim of a pull topic does that alone); its claims check each job they
  would start against its expiresAt and, when the topic sets maxLateness,
  its due time plus that: a job with no attempt past either is expired
  instead of leased. A push claim of such a topic keeps it in the topic
  index, paused or pull, no later than its next expiresAt. A topic never
  marked pays no command for any of this.

  Shaped topics (lib/flow.lua): nd is 0 and the default lane's plain jobs are
  jobs of the key "" with source "D". After the nd + nl + nx candidates' keys,
  KEYS holds the topic's nine flow keys (fdue, fsched, fready, fcal, fpark,
  fin, ftat, fkeys, fkidx), then the record and meta of each of the ne jobs. Each
  served key, in turn, takes up to its weight of its jobs, bounded by what
  the topic may still take, its parallelism and its rate (GCRA), and goes
  back behind every key still waiting (or parked at its parallelism, or to
  when its rate allows, or out of the calendar once drained); newly due
  jobs not taken move to fready, their keys into the calendar, but for those
  of a key newly ready the claim ended before, which stay in fsched. Rate
  times that passed are forgotten (forgetPastRates in lib/flow.lua).

  Returns  { next due ms (-1: none), reaped and retried, reaped and dead, paused (1/0),
             ms until the token bucket holds a whole token (0: not rate-limited now),
             what held jobs back: 0 nothing (or max), 1 concurrency, 2 rate, 3 paused, 4 the topic's mode,
               5 the reply's byte budget (more are takeable now, due or within the lead),
               6 the topic is shaped and the claim plain (nothing was read or written: claim it as shaped),
             push claims: the score written to the topic index (-1: removed); pull claims: -1,
             the lease deadline of a job due now, ms (a job taken ahead is leased that much past its due time),
             the conf hash (flat field/value array) for push claims, else an empty array,
             ids to sweep: finished jobs past the retention window (array),
             ids to sweep: dead letters past the cap (array),
             orphans: due candidates without a record, left due (array),
             then per job taken: id, attempt, due ms, record JSON }
]]
-- @include records
-- @include expire
-- @include metrics
-- @include index
-- @include flow
local rcall = redis.call
local dueKey, leaseKey, confKey, bucketKey, metricsKey, deadAtKey, doneKey, indexKey, expKey =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local now = tonumber(ARGV[1])
local max = tonumber(ARGV[2])
local defaultMaxAttempts = tonumber(ARGV[5])
local defaultBackoff = ARGV[6]
local deadCap = tonumber(ARGV[7])
local retention = tonumber(ARGV[8])
local nd, nl, nx = tonumber(ARGV[15]), tonumber(ARGV[16]), tonumber(ARGV[22])
local shaped = ARGV[17] == "1"
local ne, np, nk = tonumber(ARGV[18]), tonumber(ARGV[19]), tonumber(ARGV[20])
local rounds = tonumber(ARGV[21]) or 1
local FIRST_ID, FIRST_KEY = 23, 10
-- Candidate c (1..nd due, then nd+1..nd+nl leased): its id, record key and meta key.
local function candidate(c)
  return ARGV[FIRST_ID + c - 1], KEYS[FIRST_KEY + 2 * (c - 1)], KEYS[FIRST_KEY + 2 * (c - 1) + 1]
end
-- Finished jobs looked at per claim for sweeping, and the wait before an idle topic is looked at for it.
local SWEEP_BATCH = --[[LIMIT:SWEEP_BATCH]]250
local SWEEP_SLACK_MS = --[[LIMIT:SWEEP_SLACK_MS]]60000
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

-- A shaped topic's flow keys, after the candidates' (lib/flow.lua).
local FK = FIRST_KEY + 2 * (nd + nl + nx)
local fdueKey, fschedKey, freadyKey, fcalKey, fparkKey, finKey, ftatKey, fkeysKey, fkidxKey =
  KEYS[FK], KEYS[FK + 1], KEYS[FK + 2], KEYS[FK + 3], KEYS[FK + 4], KEYS[FK + 5], KEYS[FK + 6], KEYS[FK + 7], KEYS[FK + 8]
local expiring = conf.expiring == "1"
local maxLateness = tonumber(conf.maxLateness)
local finishKeys = { done = doneKey, deadAt = deadAtKey, exp = expKey, metrics = metricsKey }
local keepExpired = conf.keepExpired == "true"
-- @include claim-expire

-- 0. A topic of the other mode gives nothing; the tick forgets a pull topic, unless jobs of it are to expire.
if (conf.mode or "push") ~= caller then
  if push then
    -- A shaped topic's expiry needs its flow keys: the caller claims it again as shaped.
    if expiring and conf.shaped == "1" and not shaped then
      return { -1, 0, 0, conf.paused == "true" and 1 or 0, 0, 6, -1, deadline, {}, {}, {}, {} }
    end
    local nextExpiry
    if expiring then
      expirePast()
      nextExpiry = expiryLook()
    end
    if nextExpiry then rcall("ZADD", indexKey, nextExpiry, topic) else rcall("ZREM", indexKey, topic) end
  end
  -- The conf tells the caller of the mark, so its next claim reads the jobs to expire.
  return { -1, 0, 0, conf.paused == "true" and 1 or 0, 0, 4, -1, deadline, (push and expiring) and confFlat or {}, {}, {}, {} }
end
-- A shaped topic's keyed jobs are not in its due set: a plain claim would
-- hide them from the index. The caller claims it again as shaped.
if conf.shaped == "1" and not shaped then
  return { -1, 0, 0, conf.paused == "true" and 1 or 0, 0, 6, -1, deadline, {}, {}, {}, {} }
end
if expiring then expirePast() end
local fs = shaped and flowSettings(conf.flow) or nil
-- Keys whose jobs' attempts ended while reaping (key -> count): their slots free up.
local ended = {}

-- 1. Reap expired leases (lib/claim-reap.lua: in a file of its own for its size).
-- @include claim-reap

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

local out = { -1, retried, died, paused and 1 or 0, 0, 0, -1, deadline, push and confFlat or {}, {}, {}, {} }
local orphans = out[12]

-- 3 (shaped): claimKeyed, in its own file for its size.
-- @include claim-keyed

-- 3. Take due jobs, and without limits those due within the lead: a limit
-- counts jobs as they are taken, so it could not hold for jobs started later.
local horizon = now
-- A topic with job keys takes none ahead: a job leased early could no longer take the upserts until its due time.
if lead > 0 and not paused and not concurrency and not rate and not shaped and conf.jobKeys ~= "1" then horizon = now + lead end
local cut = false
local flowNext
if shaped then
  cut, flowNext = claimKeyed()
elseif take > 0 and nd + #rescheduled > 0 then
  -- The candidates still due within the horizon, with the jobs just reaped
  -- and due again, in due order (candidates were read in it; ties keep it).
  local picks, readKeys = {}, {}
  if nd > 0 then
    local dids = {}
    for c = 1, nd do dids[c] = (candidate(c)) end
    local scores = rcall("ZMSCORE", dueKey, unpack(dids))
    for c = 1, nd do
      local score = scores[c] and tonumber(scores[c])
      if score and score <= horizon then
        local id, rk, mk = candidate(c)
        picks[#picks + 1] = { id = id, rk = rk, mk = mk, due = score, order = c }
      end
    end
  end
  for j, r in ipairs(rescheduled) do
    if r.due <= horizon then
      r.order = nd + j
      picks[#picks + 1] = r
    end
  end
  if #rescheduled > 0 then
    table.sort(picks, function(x, y)
      if x.due ~= y.due then return x.due < y.due end
      return x.order < y.order
    end)
  end
  local expiries
  picks, expiries = picksToRead(picks, take)
  for _, p in ipairs(picks) do
    readKeys[#readKeys + 1] = p.rk
    readKeys[#readKeys + 1] = p.mk
  end
  local bytes, gone, leaseArgs, metaPairs = 0, {}, {}, {}
  local lapsed, lapsedIds = {}, {}
  if #picks > 0 then
    -- One read of the records and metas, as ever: a claim costs no more commands for its budget.
    local got = rcall("MGET", unpack(readKeys))
    for i, p in ipairs(picks) do
      local id, mk = p.id, p.mk
      local record = got[2 * i - 1]
      local meta = record and got[2 * i] and cjson.decode(got[2 * i]) or { a = 0 }
      -- A job taken ahead starts at its due time: its attempt and its lease count from then.
      local start = math.max(now, p.due)
      if not record then
        -- Left due: the caller moves it from the hash model, or drops it.
        orphans[#orphans + 1] = id
      elseif lapses(meta.a, start, p.due, expiries[i]) then
        lapsed[#lapsed + 1] = { id = id, mk = mk, raw = got[2 * i] }
        lapsedIds[#lapsedIds + 1] = id
      elseif #leaseArgs / 2 >= take then
        -- Read as one that might lapse, but it had attempts: the claim is full, and it stays due, untouched.
        break
      else
        -- The reply stays within the budget, save a lone job larger than it; the rest stay due, untouched.
        if #leaseArgs > 0 and bytes + #record > REPLY_BUDGET then
          cut = true
          break
        end
        bytes = bytes + #record
        local attempt = meta.a + 1
        meta.a, meta.d, meta.s = attempt, p.due, start
        leaseArgs[#leaseArgs + 1] = start + leaseMs
        leaseArgs[#leaseArgs + 1] = id
        metaPairs[#metaPairs + 1] = mk
        metaPairs[#metaPairs + 1] = cjson.encode(meta)
        gone[#gone + 1] = id
        out[#out + 1] = id
        out[#out + 1] = attempt
        out[#out + 1] = p.due
        out[#out + 1] = record
      end
    end
  end
  local taken = #leaseArgs / 2
  if taken > 0 then
    -- Writes first: the lease and the meta exist before the id leaves the due set.
    msetPairs(metaPairs)
    rcall("ZADD", leaseKey, unpack(leaseArgs))
    rcall("ZREM", dueKey, unpack(gone))
    rcall("HINCRBY", metricsKey, "dispatched", taken)
    startedNotExpiring(leaseArgs)
  end
  if #lapsed > 0 then
    expireJobs(lapsed, ARGV[1], finishKeys, keepExpired)
    rcall("ZREM", dueKey, unpack(lapsedIds))
  end
  if tokens and #picks > 0 then
    tokens = tokens - taken
    rcall("HSET", bucketKey, "t", tostring(tokens), "ts", now)
  end
end
-- Concurrency held jobs back only when the claim filled every free slot. One
-- that took fewer left ready jobs for other reasons — a key that became
-- ready as this claim reaped its lease, jobs that became due after the read —
-- which a claim now can take: no settle is coming to lower the score for them.
if heldBy == 1 and (#out - 12) / 4 < take then heldBy = 0 end
-- Tell a caller held back by the rate when to come back, so it sleeps instead of spinning.
local tokenInMs = 0
if tokens and tokens < 1 then tokenInMs = math.ceil((1 - tokens) * 1000 / rate) end
out[5] = tokenInMs

local nextDue
if shaped then nextDue = laneNext(dueKey, fcalKey) else nextDue = earliestScore(dueKey) end
if flowNext and (nextDue == nil or flowNext < nextDue) then nextDue = flowNext end
-- Whole ms up: a reply turns a number into an integer by cutting its fraction (a key's turn is
-- "behind every key waiting", now plus a fraction of a ms), which would read as now.
if nextDue then out[1] = math.ceil(nextDue) end
local ready = nextDue ~= nil and nextDue <= now
-- Cut by the reply's budget: more are takeable now, whether due or within the lead.
if cut then heldBy = 5 end
if ready or cut then out[6] = heldBy end
-- Within the horizon: a claim now could take it.
local takeable = nextDue ~= nil and nextDue <= horizon

-- Finished jobs past the retention window go to the caller to sweep, a full
-- batch at a time, or whatever is there once the oldest has waited the slack:
-- a busy topic's claims do not each sweep the one or two jobs that just expired.
local threshold = now - retention
local expiredDone = rcall("ZRANGEBYSCORE", doneKey, "-inf", threshold, "WITHSCORES", "LIMIT", 0, SWEEP_BATCH)
local oldestDone = expiredDone[2] and tonumber(expiredDone[2])
if oldestDone and (#expiredDone / 2 >= SWEEP_BATCH or oldestDone <= threshold - SWEEP_SLACK_MS) then
  for i = 1, #expiredDone, 2 do out[10][#out[10] + 1] = expiredDone[i] end
end

-- Dead letters past the cap (settles and reaping add them; the oldest go).
out[11] = overCap(deadAtKey, deadCap)

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
  -- Jobs to expire keep the topic in the index, paused or not, until their expiresAt.
  local nextExpiry = expiring and expiryLook()
  if nextExpiry then sooner(nextExpiry) end
  -- Finished jobs keep the topic in the index until they are swept: once the oldest is past the slack.
  if not oldestDone then oldestDone = earliestScore(doneKey) end
  if oldestDone then sooner(oldestDone + retention + SWEEP_SLACK_MS) end
  if look then
    rcall("ZADD", indexKey, look, topic)
    out[7] = math.ceil(look)
  else
    rcall("ZREM", indexKey, topic)
  end
end
return out
