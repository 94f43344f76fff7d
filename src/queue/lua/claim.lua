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
  then per candidate id (the ARGV[17…] ids, in order), two keys from KEYS[9]:
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
  ARGV[21] the rounds of turns this claim gives the served keys (flow-read.lua): a key's turn is its weight times them
  ARGV[22…] the nd due candidates, then the nl lease candidates; then, for a shaped topic, as
           flow-read.lua named them: the jobs (key, id, priority, due, source), the newly due
           (key, priority, id, due), the keys served in turn order (key, 1 in the calendar / 0 newly ready)

  Shaped topics (lib/flow.lua): nd is 0 and the default lane's plain jobs are
  jobs of the key "" with source "D". After the nd + nl candidates' keys,
  KEYS holds the topic's eight flow keys (fdue, fsched, fready, fcal, fpark,
  fin, ftat, fkeys), then the record and meta of each of the ne jobs. Each
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
-- @include metrics
-- @include index
-- @include flow
local rcall = redis.call
local dueKey, leaseKey, confKey, bucketKey, metricsKey, deadAtKey, doneKey, indexKey =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local now = tonumber(ARGV[1])
local max = tonumber(ARGV[2])
local defaultMaxAttempts = tonumber(ARGV[5])
local defaultBackoff = ARGV[6]
local deadCap = tonumber(ARGV[7])
local retention = tonumber(ARGV[8])
local nd, nl = tonumber(ARGV[15]), tonumber(ARGV[16])
local shaped = ARGV[17] == "1"
local ne, np, nk = tonumber(ARGV[18]), tonumber(ARGV[19]), tonumber(ARGV[20])
local rounds = tonumber(ARGV[21]) or 1
local FIRST_ID, FIRST_KEY = 22, 9
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

-- 0. A topic of the other mode gives nothing; the tick forgets a pull topic.
if (conf.mode or "push") ~= caller then
  if push then rcall("ZREM", indexKey, topic) end
  return { -1, 0, 0, conf.paused == "true" and 1 or 0, 0, 4, -1, deadline, {}, {}, {}, {} }
end
-- A shaped topic's keyed jobs are not in its due set: a plain claim would
-- hide them from the index. The caller claims it again as shaped.
if conf.shaped == "1" and not shaped then
  return { -1, 0, 0, conf.paused == "true" and 1 or 0, 0, 6, -1, deadline, {}, {}, {}, {} }
end

-- A shaped topic's flow keys, after the candidates' (lib/flow.lua).
local FK = FIRST_KEY + 2 * (nd + nl)
local fdueKey, fschedKey, freadyKey, fcalKey, fparkKey, finKey, ftatKey, fkeysKey =
  KEYS[FK], KEYS[FK + 1], KEYS[FK + 2], KEYS[FK + 3], KEYS[FK + 4], KEYS[FK + 5], KEYS[FK + 6], KEYS[FK + 7]
local fs = shaped and flowSettings(conf.flow) or nil
-- Keys whose jobs' attempts ended while reaping (key -> count): their slots free up.
local ended = {}

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

-- 1. Reap expired leases: the lease candidates still leased, with a deadline passed.
local retried, died = 0, 0
-- Reaped jobs scheduled again (id, record key, meta key, due ms): this claim may take them too, as it was given their keys.
local rescheduled = {}
if nl > 0 then
  local expired, recordKeys, metaKeys = {}, {}, {}
  local lids = {}
  for c = nd + 1, nd + nl do lids[#lids + 1] = (candidate(c)) end
  local scores = rcall("ZMSCORE", leaseKey, unpack(lids))
  local readKeys = {}
  for j = 1, nl do
    local score = scores[j]
    -- A lease is over at its deadline (the score the topic index gives it).
    if score and tonumber(score) <= now then
      local id, rk, mk = candidate(nd + j)
      expired[#expired + 1] = id
      recordKeys[#recordKeys + 1] = rk
      metaKeys[#metaKeys + 1] = mk
      readKeys[#readKeys + 1] = rk
      readKeys[#readKeys + 1] = mk
    end
  end
  if #expired > 0 then
    local got = rcall("MGET", unpack(readKeys))
    local dueArgs, metaPairs, deadIds, deadPairs = {}, {}, {}, {}
    local keyedDue, keyedSched = {}, {}
    for i, id in ipairs(expired) do
      local record = got[2 * i - 1]
      if record then
        local job = cjson.decode(record)
        local meta = got[2 * i] and cjson.decode(got[2 * i]) or { a = 1 }
        local attempts = meta.a
        local maxAttempts = job.maxAttempts or tonumber(conf.maxAttempts) or defaultMaxAttempts
        local err = "lease expired: attempt " .. attempts .. " did not settle in time"
        local started = meta.s
        local history = appendAttempt(meta.h, inRun({ n = attempts, t = started, ms = started and math.max(0, now - started), o = "expired", e = err }, meta.h))
        -- A keyed job's key (meta.k, "" for the default lane) gets its slot back.
        if meta.k and meta.k ~= "" then ended[meta.k] = (ended[meta.k] or 0) + 1 end
        if attempts >= maxAttempts then
          deadIds[#deadIds + 1] = id
          deadPairs[#deadPairs + 1] = metaKeys[i]
          deadPairs[#deadPairs + 1] = finishedMeta("dead", attempts, cjson.encode(err), ARGV[1], historyJson(history), flowJsonOf(meta))
          died = died + 1
        else
          local policy = job.backoff or (conf.backoff and cjson.decode(conf.backoff)) or cjson.decode(defaultBackoff)
          local at = now + backoffDelay(policy, attempts)
          metaPairs[#metaPairs + 1] = metaKeys[i]
          metaPairs[#metaPairs + 1] = cjson.encode({ a = attempts, d = at, e = err, h = history, k = meta.k, p = meta.p })
          if meta.k then
            -- Back by its key: a shaped topic's claim moves it to waiting when due.
            keyedDue[#keyedDue + 1] = at
            keyedDue[#keyedDue + 1] = id
            keyedSched[#keyedSched + 1] = at
            keyedSched[#keyedSched + 1] = scheduledMember(meta.k, meta.p or 0, id)
          else
            dueArgs[#dueArgs + 1] = at
            dueArgs[#dueArgs + 1] = id
            rescheduled[#rescheduled + 1] = { id = id, rk = recordKeys[i], mk = metaKeys[i], due = at }
          end
          retried = retried + 1
        end
      end
    end
    -- Writes first: the retry or the letter exists before the lease is gone.
    if #metaPairs > 0 then msetPairs(metaPairs) end
    if #dueArgs > 0 then rcall("ZADD", dueKey, unpack(dueArgs)) end
    if #keyedDue > 0 then scheduleKeyed(fdueKey, fschedKey, keyedDue, keyedSched) end
    if #deadIds > 0 then writeFinished(deadAtKey, ARGV[1], deadIds, deadPairs) end
    rcall("ZREM", leaseKey, unpack(expired))
    if shaped then releaseKeys(finKey, fparkKey, fcalKey, ended, now) end
    if retried + died > 0 then addMetrics(metricsKey, math.floor(now / 60000), withOutcomes({}, 0, retried, died)) end
  end
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

local out = { -1, retried, died, paused and 1 or 0, 0, 0, -1, deadline, push and confFlat or {}, {}, {}, {} }
local orphans = out[12]

-- 3 (shaped). Serves the keys flow-read.lua named, in turn (see the header),
-- taking up to `take` jobs. Returns whether the reply's byte budget cut it
-- short, and the earliest score left in the keyed sets (fsched's next due,
-- fcal's next turn), or nil.
local function claimKeyed()
  local jobBase = FIRST_ID + nd + nl
  local newlyBase = jobBase + 5 * ne
  local keyBase = newlyBase + 4 * np
  local FJ = FK + 8
  local jobs = {}
  local dIds, kIds, aMembers = {}, {}, {}
  for e = 1, ne do
    local b = jobBase + 5 * (e - 1)
    local job = { key = ARGV[b], id = ARGV[b + 1], priority = tonumber(ARGV[b + 2]) or 0, source = ARGV[b + 4],
      rk = KEYS[FJ + 2 * (e - 1)], mk = KEYS[FJ + 2 * (e - 1) + 1] }
    jobs[e] = job
    if job.source == "D" then
      dIds[#dIds + 1] = job.id
    else
      kIds[#kIds + 1] = job.id
      if job.source ~= "B" then
        job.member = readyMember(job.key, tonumber(job.source), job.priority, job.id)
        aMembers[#aMembers + 1] = job.member
      else
        job.member = scheduledMember(job.key, job.priority, job.id)
      end
    end
  end
  -- The newly due keyed jobs, as fsched names them; those still there move to fready unless taken.
  local newly, newlyMembers = {}, {}
  for i = 1, np do
    local b = newlyBase + 4 * (i - 1)
    local job = { key = ARGV[b], priority = tonumber(ARGV[b + 1]), id = ARGV[b + 2] }
    job.member = scheduledMember(job.key, job.priority, job.id)
    newly[i] = job
    newlyMembers[i] = job.member
  end
  -- Everything checked again: a job another claim took, or a cancel or reschedule moved, is skipped.
  local dScores = #dIds > 0 and rcall("ZMSCORE", dueKey, unpack(dIds)) or {}
  local kScores = #kIds > 0 and rcall("ZMSCORE", fdueKey, unpack(kIds)) or {}
  local aScores = #aMembers > 0 and rcall("ZMSCORE", freadyKey, unpack(aMembers)) or {}
  local sScores = np > 0 and rcall("ZMSCORE", fschedKey, unpack(newlyMembers)) or {}
  local schedDue = {}
  for i, job in ipairs(newly) do
    local score = sScores[i] and tonumber(sScores[i])
    if score and score <= now then schedDue[job.member] = score end
  end
  local byKey, garbage = {}, {}
  local di, ki, ai = 0, 0, 0
  for _, job in ipairs(jobs) do
    local due
    if job.source == "D" then
      di = di + 1
      due = dScores[di] and tonumber(dScores[di])
      if due and due > now then due = nil end
    else
      ki = ki + 1
      local known = kScores[ki] and tonumber(kScores[ki])
      if job.source == "B" then
        if known and schedDue[job.member] then due = known end
      else
        ai = ai + 1
        if known and aScores[ai] then due = known end
        -- A waiting member whose job is no longer scheduled (a cancel that could not name it) is dropped.
        if not known and aScores[ai] then garbage[#garbage + 1] = job.member end
      end
    end
    if due then
      job.due = due
      local list = byKey[job.key]
      if not list then
        list = {}
        byKey[job.key] = list
      end
      list[#list + 1] = job
    end
  end
  if #garbage > 0 then rcall("ZREM", freadyKey, unpack(garbage)) end

  -- The served keys, as they stand now, and what each may take.
  local keys, wasInCal = {}, {}
  for j = 1, nk do
    keys[j] = ARGV[keyBase + 2 * (j - 1)]
    wasInCal[j] = ARGV[keyBase + 2 * (j - 1) + 1] == "1"
  end
  local calScores, parkScores, inFlight, used, tats, own = {}, {}, {}, {}, {}, {}
  if nk > 0 then
    calScores = rcall("ZMSCORE", fcalKey, unpack(keys))
    parkScores = rcall("ZMSCORE", fparkKey, unpack(keys))
    -- In one read: each key's jobs in flight, then what it started of a turn cut short.
    local fields = {}
    for j, key in ipairs(keys) do
      fields[j] = key
      fields[nk + j] = key .. "\tu"
    end
    local counts = rcall("HMGET", finKey, unpack(fields))
    for j = 1, nk do
      inFlight[j] = counts[j]
      used[j] = tonumber(counts[nk + j]) or 0
    end
    tats = rcall("ZMSCORE", ftatKey, unpack(keys))
    own = rcall("HMGET", fkeysKey, unpack(keys))
    for j = 1, nk do own[j] = own[j] and cjson.decode(own[j]) or {} end
  end
  local plans, picks, left = {}, {}, take
  local calDrop, parkArgs = {}, {}
  local reached = 0
  for j, key in ipairs(keys) do
    if left <= 0 then break end
    reached = j
    local cal = calScores[j] and tonumber(calScores[j]) or nil
    -- In its turn: in the calendar at or before now; or newly ready and still in neither the calendar nor parked.
    local inTurn
    if wasInCal[j] then inTurn = cal ~= nil and cal <= now else inTurn = cal == nil and not parkScores[j] end
    local list = byKey[key] or {}
    if inTurn and (#list > 0 or wasInCal[j]) then
      local o = own[j]
      local limited = key ~= ""
      local plan = { key = key, list = list, cal = wasInCal[j], weight = tonumber(o.weight) or fs.weight, flying = tonumber(inFlight[j]) or 0, taken = 0, used = used[j] }
      -- The key's turn: its weight times the rounds, less what it started of a turn the last claim cut short.
      plan.turn = math.max(1, plan.weight * rounds - plan.used)
      plan.par = limited and (tonumber(o.parallelism) or tonumber(fs.parallelism)) or nil
      local keyRate = limited and (tonumber(o.ratePerSec) or tonumber(fs.ratePerSec)) or nil
      if limited and o.paused then
        parkArgs[#parkArgs + 1] = 2
        parkArgs[#parkArgs + 1] = key
        calDrop[#calDrop + 1] = key
      elseif plan.par and plan.flying >= plan.par then
        parkArgs[#parkArgs + 1] = 1
        parkArgs[#parkArgs + 1] = key
        calDrop[#calDrop + 1] = key
      else
        local q = math.min(plan.turn, #list)
        if plan.par then q = math.min(q, plan.par - plan.flying) end
        if keyRate and keyRate > 0 then
          -- GCRA: a start is allowed while the key's theoretical arrival time is at most burst - 1 intervals ahead.
          plan.interval = 1000 / keyRate
          plan.burst = tonumber(o.burst) or tonumber(fs.burst) or math.max(1, math.floor(keyRate))
          plan.tat = math.max(tonumber(tats[j]) or now, now)
          local allowed = math.floor(((plan.burst - 1) * plan.interval - (plan.tat - now)) / plan.interval + 1e-9) + 1
          q = math.min(q, math.max(0, allowed))
        end
        -- The key's own limits end its turn; the claim's end only cuts it short.
        plan.limitedTo = q
        q = math.min(q, left)
        for i = 1, q do picks[#picks + 1] = { job = list[i], plan = plan } end
        left = left - q
        plans[#plans + 1] = plan
      end
    end
  end

  -- One read of the picks' records and metas; the reply stays within its byte budget (one job always goes).
  local cutShort, taken = false, 0
  local leaseArgs, metaPairs, gone, goneKeyed, goneReady, goneSched = {}, {}, {}, {}, {}, {}
  local takenSched = {}
  if #picks > 0 then
    local readKeys = {}
    for _, p in ipairs(picks) do
      readKeys[#readKeys + 1] = p.job.rk
      readKeys[#readKeys + 1] = p.job.mk
    end
    local got = rcall("MGET", unpack(readKeys))
    local bytes = 0
    for i, p in ipairs(picks) do
      local job, record = p.job, got[2 * i - 1]
      if record then
        if taken > 0 and bytes + #record > REPLY_BUDGET then
          cutShort = true
          break
        end
        bytes = bytes + #record
        local meta = got[2 * i] and cjson.decode(got[2 * i]) or { a = 0 }
        local attempt = meta.a + 1
        meta.a, meta.d, meta.s = attempt, job.due, now
        if job.source ~= "D" then meta.k, meta.p = job.key, job.priority end
        leaseArgs[#leaseArgs + 1] = now + leaseMs
        leaseArgs[#leaseArgs + 1] = job.id
        metaPairs[#metaPairs + 1] = job.mk
        metaPairs[#metaPairs + 1] = cjson.encode(meta)
        if job.source == "D" then
          gone[#gone + 1] = job.id
        else
          goneKeyed[#goneKeyed + 1] = job.id
          if job.source == "B" then
            goneSched[#goneSched + 1] = job.member
            takenSched[job.member] = true
          else
            goneReady[#goneReady + 1] = job.member
          end
        end
        p.plan.taken = p.plan.taken + 1
        taken = taken + 1
        out[#out + 1] = job.id
        out[#out + 1] = attempt
        out[#out + 1] = job.due
        out[#out + 1] = record
      else
        -- Left where it is: the caller moves it from the hash model, or drops it.
        orphans[#orphans + 1] = job.id
      end
    end
  end
  if taken > 0 then
    -- Writes first: the lease and the meta exist before the id leaves its set.
    msetPairs(metaPairs)
    rcall("ZADD", leaseKey, unpack(leaseArgs))
    if #gone > 0 then rcall("ZREM", dueKey, unpack(gone)) end
    if #goneKeyed > 0 then rcall("ZREM", fdueKey, unpack(goneKeyed)) end
    if #goneReady > 0 then rcall("ZREM", freadyKey, unpack(goneReady)) end
    if #goneSched > 0 then rcall("ZREM", fschedKey, unpack(goneSched)) end
    rcall("HINCRBY", metricsKey, "dispatched", taken)
    if tokens then
      tokens = tokens - taken
      rcall("HSET", bucketKey, "t", tostring(tokens), "ts", now)
    end
  end

  -- Newly due keyed jobs not taken wait for their key's turn; those of a key newly ready that the claim
  -- ended before, still neither in the calendar nor parked, stay scheduled for a later claim to serve.
  local unreached = {}
  for j = reached + 1, nk do
    if not wasInCal[j] and not calScores[j] and not parkScores[j] then unreached[keys[j]] = true end
  end
  local promote, promoteDrop, firstReady = {}, {}, {}
  for _, job in ipairs(newly) do
    local due = schedDue[job.member]
    if due and not takenSched[job.member] and not unreached[job.key] then
      promote[#promote + 1] = 0
      promote[#promote + 1] = readyMember(job.key, effectiveTime(due, job.priority, fs.priorityStepMs), job.priority, job.id)
      promoteDrop[#promoteDrop + 1] = job.member
      if firstReady[job.key] == nil or due < firstReady[job.key] then firstReady[job.key] = due end
    end
  end
  if #promote > 0 then
    rcall("ZADD", freadyKey, unpack(promote))
    rcall("ZREM", fschedKey, unpack(promoteDrop))
  end

  -- When a key not yet in the calendar became ready: its earliest due job's time.
  local function firstReadyOf(plan)
    local first = now
    for _, job in ipairs(plan.list) do
      if job.due < first then first = job.due end
    end
    return first
  end

  -- Each served key's next turn: behind every key waiting, at its rate's next start, parked, or out once drained.
  local calArgs, finSet, finDrop, tatArgs, drained, served = {}, {}, {}, {}, {}, {}
  local seq = 0
  for _, plan in ipairs(plans) do
    local key, n = plan.key, plan.taken
    if n > 0 or not cutShort then
      served[key] = true
      local flying = plan.flying + n
      -- Every key's jobs in flight are counted (a parallelism set later holds at once; the topic shows them).
      if key ~= "" and n > 0 then
        finSet[#finSet + 1] = key
        finSet[#finSet + 1] = flying
      end
      local next
      if plan.tat then
        plan.tat = plan.tat + n * plan.interval
        if n > 0 then
          tatArgs[#tatArgs + 1] = plan.tat
          tatArgs[#tatArgs + 1] = key
        end
        local at = plan.tat - (plan.burst - 1) * plan.interval
        if at > now then next = at end
      end
      local more = #plan.list > n or firstReady[key] ~= nil
      -- The read named one job more than the key could take: a key that took them all may still hold more.
      if not more and plan.cal and #plan.list >= math.min(plan.weight * rounds, max) + 1 then more = true end
      local partial = n < plan.limitedTo
      if partial then
        -- The claim ended within the key's turn: the key keeps its place, and the next claim gives it the rest.
        finSet[#finSet + 1] = key .. "\tu"
        finSet[#finSet + 1] = plan.used + n
        if not plan.cal then
          calArgs[#calArgs + 1] = firstReadyOf(plan)
          calArgs[#calArgs + 1] = key
        end
      elseif plan.used > 0 then
        finDrop[#finDrop + 1] = key .. "\tu"
      end
      if partial then
        -- kept in place above
      elseif not more then
        if plan.cal then drained[#drained + 1] = key end
        calDrop[#calDrop + 1] = key
      elseif plan.par and flying >= plan.par then
        parkArgs[#parkArgs + 1] = 1
        parkArgs[#parkArgs + 1] = key
        calDrop[#calDrop + 1] = key
      elseif next then
        calArgs[#calArgs + 1] = next
        calArgs[#calArgs + 1] = key
      else
        seq = seq + 1
        calArgs[#calArgs + 1] = now + seq / 1000
        calArgs[#calArgs + 1] = key
      end
    end
  end
  -- A key that looks drained may have had jobs moved to waiting by a claim
  -- beside this one since flow-read.lua ran: it stays in the calendar then.
  for _, key in ipairs(drained) do
    if #rcall("ZRANGEBYLEX", freadyKey, "[" .. key .. "\n", "(" .. key .. "\v", "LIMIT", 0, 1) > 0 then
      for i = #calDrop, 1, -1 do
        if calDrop[i] == key then table.remove(calDrop, i) end
      end
      seq = seq + 1
      calArgs[#calArgs + 1] = now + seq / 1000
      calArgs[#calArgs + 1] = key
    end
  end
  if #calDrop > 0 then rcall("ZREM", fcalKey, unpack(calDrop)) end
  if #calArgs > 0 then rcall("ZADD", fcalKey, unpack(calArgs)) end
  if #parkArgs > 0 then rcall("ZADD", fparkKey, unpack(parkArgs)) end
  if #finSet > 0 then rcall("HSET", finKey, unpack(finSet)) end
  if #finDrop > 0 then rcall("HDEL", finKey, unpack(finDrop)) end
  if #tatArgs > 0 then rcall("ZADD", ftatKey, unpack(tatArgs)) end
  -- Keys whose jobs just became due join the calendar at the time they did, unless already in it or parked.
  local joining = {}
  for key, due in pairs(firstReady) do
    if not served[key] then joining[#joining + 1] = key end
  end
  if #joining > 0 then
    local parked = rcall("ZMSCORE", fparkKey, unpack(joining))
    local args = {}
    for i, key in ipairs(joining) do
      if not parked[i] then
        args[#args + 1] = firstReady[key]
        args[#args + 1] = key
      end
    end
    if #args > 0 then rcall("ZADD", fcalKey, "NX", unpack(args)) end
  end
  -- The plain due set's default lane needs no calendar entry: flow-read.lua finds it by its head.

  local nextAt = earliestScore(fschedKey)
  local turn = earliestScore(fcalKey)
  if turn and (nextAt == nil or turn < nextAt) then nextAt = turn end
  -- Rate times that passed are forgotten by the claims that write them, and by one that leaves no key to
  -- serve: that one looks again when the next passes, so no drained key's time stays for good.
  if #tatArgs > 0 or nextAt == nil then
    local pending = forgetPastRates(ftatKey, now)
    if nextAt == nil then nextAt = pending end
  end
  return cutShort, nextAt
end

-- 3. Take due jobs, and without limits those due within the lead: a limit
-- counts jobs as they are taken, so it could not hold for jobs started later.
local horizon = now
if lead > 0 and not paused and not concurrency and not rate and not shaped then horizon = now + lead end
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
  for j = #picks, take + 1, -1 do picks[j] = nil end
  for _, p in ipairs(picks) do
    readKeys[#readKeys + 1] = p.rk
    readKeys[#readKeys + 1] = p.mk
  end
  local bytes, gone, leaseArgs, metaPairs = 0, {}, {}, {}
  if #picks > 0 then
    -- One read of the records and metas, as ever: a claim costs no more commands for its budget.
    local got = rcall("MGET", unpack(readKeys))
    for i, p in ipairs(picks) do
      local id, mk = p.id, p.mk
      local record = got[2 * i - 1]
      if not record then
        -- Left due: the caller moves it from the hash model, or drops it.
        orphans[#orphans + 1] = id
      else
        -- The reply stays within the budget, save a lone job larger than it; the rest stay due, untouched.
        if #leaseArgs > 0 and bytes + #record > REPLY_BUDGET then
          cut = true
          break
        end
        bytes = bytes + #record
        local meta = got[2 * i] and cjson.decode(got[2 * i]) or { a = 0 }
        local attempt = meta.a + 1
        -- A job taken ahead starts at its due time: its attempt and its lease count from then.
        local start = math.max(now, p.due)
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
  end
  if tokens and #picks > 0 then
    tokens = tokens - taken
    rcall("HSET", bucketKey, "t", tostring(tokens), "ts", now)
  end
end
-- Tell a caller held back by the rate when to come back, so it sleeps instead of spinning.
local tokenInMs = 0
if tokens and tokens < 1 then tokenInMs = math.ceil((1 - tokens) * 1000 / rate) end
out[5] = tokenInMs

local nextDue = earliestScore(dueKey)
if flowNext and (nextDue == nil or flowNext < nextDue) then nextDue = flowNext end
if nextDue then out[1] = nextDue end
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
  -- Finished jobs keep the topic in the index until they are swept: once the oldest is past the slack.
  if not oldestDone then oldestDone = earliestScore(doneKey) end
  if oldestDone then sooner(oldestDone + retention + SWEEP_SLACK_MS) end
  if look then
    rcall("ZADD", indexKey, look, topic)
    out[7] = look
  else
    rcall("ZREM", indexKey, topic)
  end
end
return out
