#!lua flags=allow-key-locking
--[[
  settle: records the outcomes of a chunk of one topic's claimed jobs in one
  call. Each outcome is fenced by its attempt number: unless the job is still
  leased at that very attempt (it was not re-delivered meanwhile), the outcome
  is stale and changes nothing but the job's attempt history.

  Every outcome adds an entry to its job's attempt history, in its meta
  (lib/records.lua), which a finishing outcome turns into a finished meta:
  the record is never read or written. A succeeded job's id joins the
  topic's done set (swept past the retention window), a dead one's the
  dead-letter set (the topic's next claim names the letters past the cap
  for its caller to sweep). A stale outcome of an attempt
  whose lease expired is added once as "stale" to the meta of a job that
  still lives (scheduled again, or leased at a later attempt); other stale
  outcomes (repeats of a settled attempt, or of a finished job) are dropped.

  KEYS[1]  due zset        id -> due ms
  KEYS[2]  lease zset      id -> lease deadline ms
  KEYS[3]  metrics hash    "total", per-minute ring (lib/metrics.lua)
  KEYS[4]  dead-letter set zset id -> failed ms
  KEYS[5]  done set        zset id -> finished ms
  KEYS[6]  topic index     zset topic -> when the tick should next look at it (lib/index.lua)
  KEYS[7..15] the topic's flow keys: fdue, fsched, fready, fcal, fpark, fin, ftat, fkeys, fkidx (lib/flow.lua):
           a keyed job (its meta names its key, "k") is retried by its key (and in its key's index), and its key's slot
           freed, which puts a key parked at its parallelism back into the calendar; a shaped topic
           left with nothing but keys' rate times (ftat) is scored by the first to pass
  then per outcome i, from KEYS[16 + 2(i-1)]: its job's record key (not read) and meta key

  ARGV[1]  now, epoch ms
  ARGV[2]  the chunk's observations as a metrics vector (JSON array), or "" for none
  ARGV[3]  n, the number of outcomes
  ARGV[4]  topic name (its member in the topic index)
  ARGV[5]  what the topic index learns: "" nothing (pull consumers; pull topics are not indexed),
           "r" each retry's time, "c" the topic's earliest due job, retries included
           (a topic with a concurrency limit: the slots this settle frees let ready jobs start);
           with either, a topic the index scores by the end of a lease this settle ends is scored
           by what it still holds instead (see the end of the script)
  ARGV[6]  retention, ms (as claim's ARGV[8]): when a topic's finished jobs are due for their sweep
  ARGV[7]  lead, ms (as claim's ARGV[14]): a topic rescored by its due job is scored this much before it
  ARGV[8]  "1" the topic is shaped (lib/flow.lua): its index score heeds its keyed jobs and keys too
  then for outcome i, eight values from ARGV[9 + 8(i-1)]:
           id, attempt, kind ("ack" | "retry" | "dead"), retry time ms (retry only), error text,
           when the attempt started, ms ("" unknown: when it was claimed),
           how long it ran, ms ("" unknown: from its start until now),
           the HTTP status of its delivery ("" none)

  Returns  per outcome: 1 applied, 0 stale
]]
-- @include records
-- @include metrics
-- @include index
-- @include flow
local rcall = redis.call
local dueKey, leaseKey, metricsKey, deadAtKey, doneKey, indexKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local fdueKey, fschedKey, fcalKey, fparkKey, finKey, ftatKey, fkidxKey = KEYS[7], KEYS[8], KEYS[10], KEYS[11], KEYS[12], KEYS[13], KEYS[15]
local FIRST_KEY = 16
local nowText = ARGV[1]
local now = tonumber(nowText)
local observed = ARGV[2]
local n = tonumber(ARGV[3])
local topic, indexMode = ARGV[4], ARGV[5]
local retention, lead = tonumber(ARGV[6]), tonumber(ARGV[7])
local SWEEP_SLACK_MS = --[[LIMIT:SWEEP_SLACK_MS]]60000
local shaped = ARGV[8] == "1"
local FIRST, PER = 9, 8

local ids, metaKeys = {}, {}
for i = 1, n do
  ids[i] = ARGV[FIRST + PER * (i - 1)]
  metaKeys[i] = KEYS[FIRST_KEY + 2 * (i - 1) + 1]
end
local leased = rcall("ZMSCORE", leaseKey, unpack(ids))
local metas = rcall("MGET", unpack(metaKeys))

-- The history entry of outcome i, as the attempt's meta (or nil) tells when it was claimed.
local function attemptEntry(i, outcome, meta)
  local a = FIRST + PER * (i - 1)
  local started = tonumber(ARGV[a + 5]) or (meta and meta.s)
  local ran = tonumber(ARGV[a + 6]) or (started and math.max(0, now - started))
  local err = ARGV[a + 4]
  return { n = tonumber(ARGV[a + 1]), t = started, ms = ran, o = outcome, st = tonumber(ARGV[a + 7]), e = err ~= "" and err or nil }
end

local out = {}
local live, liveMeta, finishIdx = {}, {}, {}
local seen, staleIdx = {}, {}
for i = 1, n do
  local a = FIRST + PER * (i - 1)
  local id, attempt = ids[i], tonumber(ARGV[a + 1])
  local meta = metas[i] and cjson.decode(metas[i])
  -- A finished job's meta is no live attempt's: its outcomes are stale and leave no trace.
  if isFinished(meta) then meta = nil end
  -- One outcome per job and call: a second one for the same id is stale.
  if leased[i] and meta and meta.a == attempt and not seen[id] then
    seen[id] = true
    out[i] = 1
    live[#live + 1] = i
    liveMeta[i] = meta
    if ARGV[a + 2] ~= "retry" then finishIdx[#finishIdx + 1] = i end
  else
    out[i] = 0
    if meta then staleIdx[#staleIdx + 1] = i end
  end
end

-- Whether the history says the lease of `attempt` expired and no late outcome of it was recorded yet.
local function awaitsLateOutcome(history, attempt)
  if history == nil then return false end
  for j = #history, 1, -1 do
    local h = history[j]
    if h.n == attempt then return h.o == "expired" end
  end
  return false
end

-- The late outcome of an attempt whose lease expired joins the history of a
-- job that still lives (once per attempt, so repeated stale settles cannot
-- push real attempts out); other stale outcomes (repeats of a settled
-- attempt) leave no trace.
local staleMetas, staleOrder, staleKey = {}, {}, {}
for _, i in ipairs(staleIdx) do
  local id = ids[i]
  if not seen[id] then
    local meta = staleMetas[id] or cjson.decode(metas[i])
    local attempt = tonumber(ARGV[FIRST + PER * (i - 1) + 1])
    if awaitsLateOutcome(meta.h, attempt) then
      if staleMetas[id] == nil then
        staleMetas[id] = meta
        staleOrder[#staleOrder + 1] = id
        staleKey[id] = metaKeys[i]
      end
      meta.h = appendAttempt(meta.h, inRun(attemptEntry(i, "stale", nil), meta.h))
    end
  end
end
if #staleOrder > 0 then
  local args = {}
  for _, id in ipairs(staleOrder) do
    args[#args + 1] = staleKey[id]
    args[#args + 1] = cjson.encode(staleMetas[id])
  end
  msetPairs(args)
end

if #live == 0 then
  -- Stale outcomes were still dispatched: their observations count.
  if observed ~= "" then addMetrics(metricsKey, math.floor(now / 60000), cjson.decode(observed)) end
  return out
end

local OUTCOME = { ack = "ok", retry = "retry", dead = "dead" }
local leaseIds, dueArgs, metaArgs, donePairs, deadPairs, deadIds, finished = {}, {}, {}, {}, {}, {}, {}
-- Keyed jobs: retried by their key (fdue, fsched, fkidx), and their keys' slots freed (key -> count).
local keyedRetries, ended = keyedBatch(), {}
local acked, retried, died = 0, 0, 0
local firstRetry
for _, i in ipairs(live) do
  local a = FIRST + PER * (i - 1)
  local id, kind, at, err = ids[i], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4]
  local meta = liveMeta[i]
  local attempts = meta.a
  local history = appendAttempt(meta.h, inRun(attemptEntry(i, OUTCOME[kind], meta), meta.h))
  leaseIds[#leaseIds + 1] = id
  if meta.k and meta.k ~= "" then ended[meta.k] = (ended[meta.k] or 0) + 1 end
  if kind == "retry" then
    addRetry(meta, at, id, dueArgs, keyedRetries)
    metaArgs[#metaArgs + 1] = metaKeys[i]
    metaArgs[#metaArgs + 1] = cjson.encode({ a = attempts, d = tonumber(at), e = err, h = history, k = meta.k, p = meta.p })
    retried = retried + 1
    if firstRetry == nil or tonumber(at) < firstRetry then firstRetry = tonumber(at) end
  else
    local e = (err ~= "" and cjson.encode(err)) or (meta.e and cjson.encode(meta.e)) or "null"
    local hist = historyJson(history)
    if kind == "ack" then
      finished[#finished + 1] = id
      donePairs[#donePairs + 1] = metaKeys[i]
      donePairs[#donePairs + 1] = finishedMeta("succeeded", attempts, e, nowText, hist)
      acked = acked + 1
    else
      deadIds[#deadIds + 1] = id
      deadPairs[#deadPairs + 1] = metaKeys[i]
      deadPairs[#deadPairs + 1] = finishedMeta("dead", attempts, e, nowText, hist, flowJsonOf(meta))
      died = died + 1
    end
  end
end

-- Writes first: a job is retried, done or a letter before its lease is gone.
if retried > 0 then msetPairs(metaArgs) end
if #dueArgs > 0 then rcall("ZADD", dueKey, unpack(dueArgs)) end
scheduleKeyed(fdueKey, fschedKey, fkidxKey, keyedRetries)
if #finished > 0 then writeFinished(doneKey, nowText, finished, donePairs) end
if died > 0 then writeFinished(deadAtKey, nowText, deadIds, deadPairs) end
rcall("ZREM", leaseKey, unpack(leaseIds))
-- A key parked at its parallelism is back in the calendar: the tick can start its jobs now.
local unparked = next(ended) ~= nil and releaseKeys(finKey, fparkKey, fcalKey, ended, now)
-- The claim scores a topic by its earliest lease's end, so a lost attempt is
-- reaped (claim.lua, step 4). Once the lease it scores is settled here, that
-- look is moot: a topic whose last job settled would be looked at a lease
-- later for nothing (a whole loop, when the tick had ended idle). The topic
-- is scored by what it still holds instead: its earliest lease left, its
-- earliest due job, or its finished jobs' sweep (as the claim scores them).
if indexMode ~= "" then
  local current = rcall("ZSCORE", indexKey, topic)
  local ended = false
  if current and tonumber(current) > now then
    for _, i in ipairs(live) do
      if leased[i] == current then ended = true end
    end
  end
  if ended then
    local look = earliestScore(leaseKey)
    local function sooner(t)
      if t and (look == nil or t < look) then look = t end
    end
    local due = shaped and laneNext(dueKey, fcalKey) or earliestScore(dueKey)
    if due then sooner(due - lead) end
    -- A shaped topic's keyed jobs: the next one due, or a key's next turn (no lead: a shaped topic's claims take none ahead).
    if shaped then
      sooner(earliestScore(fschedKey))
      sooner(earliestScore(fcalKey))
    end
    local oldestDone = earliestScore(doneKey)
    if oldestDone then sooner(oldestDone + retention + SWEEP_SLACK_MS) end
    -- Nothing else left: a key's rate time still to pass brings the claim that forgets it (claim.lua).
    if look == nil and shaped then look = earliestScore(ftatKey) end
    if look then
      rcall("ZADD", indexKey, look, topic)
    else
      rcall("ZREM", indexKey, topic)
    end
  end
end
if indexMode ~= "" and unparked then
  lowerIndex(indexKey, topic, now)
elseif indexMode == "c" then
  local first = shaped and laneNext(dueKey, fcalKey) or earliestScore(dueKey)
  -- Each set on its own: an empty calendar must not hide a keyed retry just scheduled.
  local function sooner(t)
    if t and (first == nil or t < first) then first = t end
  end
  if shaped then
    sooner(earliestScore(fcalKey))
    sooner(earliestScore(fschedKey))
  end
  if first then lowerIndex(indexKey, topic, first) end
elseif indexMode == "r" and firstRetry then
  lowerIndex(indexKey, topic, firstRetry)
end
local delta = observed ~= "" and cjson.decode(observed) or {}
addMetrics(metricsKey, math.floor(now / 60000), withOutcomes(delta, acked, retried, died))
return out
