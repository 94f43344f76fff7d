--[[
  claim-reap: claim.lua's step 1, kept in a file of its own for its size
  and included by claim.lua alone, at the place of that step: the lease
  candidates still leased past their deadline are reaped (a retry by their
  backoff, or a dead letter), and the locals the later steps read are
  declared here — retried, died, rescheduled (reaped jobs due again, which
  the claim may take as it was given their keys) — from claim.lua's locals
  as they stand there (nd, nl, candidate, conf, now, the defaults, the
  topic's keys, shaped and the flow keys, ended).
]]

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
    local keyedRetries = keyedBatch()
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
          -- A keyed job goes back by its key: a shaped topic's claim moves it to waiting when due.
          if not addRetry(meta, at, id, dueArgs, keyedRetries) then
            rescheduled[#rescheduled + 1] = { id = id, rk = recordKeys[i], mk = metaKeys[i], due = at }
          end
          retried = retried + 1
        end
      end
    end
    -- Writes first: the retry or the letter exists before the lease is gone.
    if #metaPairs > 0 then msetPairs(metaPairs) end
    if #dueArgs > 0 then rcall("ZADD", dueKey, unpack(dueArgs)) end
    scheduleKeyed(fdueKey, fschedKey, fkidxKey, keyedRetries)
    if #deadIds > 0 then writeFinished(deadAtKey, ARGV[1], deadIds, deadPairs) end
    rcall("ZREM", leaseKey, unpack(expired))
    if shaped then releaseKeys(finKey, fparkKey, fcalKey, ended, now) end
    if retried + died > 0 then addMetrics(metricsKey, math.floor(now / 60000), withOutcomes({}, 0, retried, died)) end
  end
end
