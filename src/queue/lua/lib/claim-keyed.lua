--[[
  claim-keyed: claim.lua's step 3 for a shaped topic (lib/flow.lua), kept in
  a file of its own for its size and included by claim.lua alone, at the
  place of that step: it reads claim.lua's locals as they stand there — the
  counts and bases of its arguments (FIRST_ID, nd, nl, nx, ne, np, nk, FK), the
  topic's keys (dueKey, leaseKey, metricsKey, bucketKey and the flow keys),
  now, max, take, tokens (which it lowers by the jobs taken), rounds, fs,
  leaseMs, REPLY_BUDGET, and the reply it fills (out, orphans); a job it would
  start past its expiry it ends instead (lib/claim-expire.lua's lapses).
]]

-- 3 (shaped). Serves the keys flow-read.lua named, in turn (see the header),
-- taking up to `take` jobs. Returns whether the reply's byte budget cut it
-- short, and the earliest score left in the keyed sets (fsched's next due,
-- fcal's next turn), or nil.
local function claimKeyed()
  local jobBase = FIRST_ID + nd + nl + nx
  local newlyBase = jobBase + 5 * ne
  local keyBase = newlyBase + 4 * np
  local FJ = FK + 9
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
  -- The newly due jobs' ids are checked in fdue in the same call: one whose job
  -- left it (cancelled, dropped) has its member dropped, never moved.
  local nkIds = #kIds
  for i, job in ipairs(newly) do kIds[nkIds + i] = job.id end
  local dScores = #dIds > 0 and rcall("ZMSCORE", dueKey, unpack(dIds)) or {}
  local kScores = #kIds > 0 and rcall("ZMSCORE", fdueKey, unpack(kIds)) or {}
  local aScores = #aMembers > 0 and rcall("ZMSCORE", freadyKey, unpack(aMembers)) or {}
  local sScores = np > 0 and rcall("ZMSCORE", fschedKey, unpack(newlyMembers)) or {}
  local schedDue, stale = {}, {}
  for i, job in ipairs(newly) do
    local score = sScores[i] and tonumber(sScores[i])
    if score and score <= now then
      if kScores[nkIds + i] then schedDue[job.member] = score else stale[#stale + 1] = job.member end
    end
  end
  if #stale > 0 then rcall("ZREM", fschedKey, unpack(stale)) end
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
    local total = 0
    for j = 1, nk do
      own[j] = own[j] and cjson.decode(own[j]) or {}
      total = total + (tonumber(own[j].weight) or fs.weight)
    end
    -- Turns fit what this claim can take, not what it asked for: at the topic's
    -- limit (a slot or a token at a time) a turn sized by the ask would keep a
    -- key in its place claim after claim while every other key waits.
    rounds = math.min(rounds, turnRounds(take, total))
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
  local leaseArgs, metaPairs, gone, goneKeyed, goneReady, goneSched, goneIndexed = {}, {}, {}, {}, {}, {}, {}
  local takenSched, lapsed = {}, {}
  if #picks > 0 then
    local readKeys = {}
    for _, p in ipairs(picks) do
      readKeys[#readKeys + 1] = p.job.rk
      readKeys[#readKeys + 1] = p.job.mk
    end
    local got = rcall("MGET", unpack(readKeys))
    local expiries = expiriesOf(picks, function(p) return p.job.id end)
    local bytes = 0
    for i, p in ipairs(picks) do
      local job, record = p.job, got[2 * i - 1]
      local meta = record and got[2 * i] and cjson.decode(got[2 * i]) or { a = 0 }
      local ends = record and lapses(meta.a, now, job.due, expiries[i])
      if record and not ends and taken > 0 and bytes + #record > REPLY_BUDGET then
        cutShort = true
        break
      end
      if ends then lapsed[#lapsed + 1] = { id = job.id, mk = job.mk, raw = got[2 * i] } end
      if record then
        local attempt = meta.a + 1
        if not ends then
          bytes = bytes + #record
          meta.a, meta.d, meta.s = attempt, job.due, now
          if job.source ~= "D" then meta.k, meta.p = job.key, job.priority end
          leaseArgs[#leaseArgs + 1] = now + leaseMs
          leaseArgs[#leaseArgs + 1] = job.id
          metaPairs[#metaPairs + 1] = job.mk
          metaPairs[#metaPairs + 1] = cjson.encode(meta)
        end
        -- Started or expired, the job leaves its pending sets.
        if job.source == "D" then
          gone[#gone + 1] = job.id
        else
          goneKeyed[#goneKeyed + 1] = job.id
          if job.key ~= "" then goneIndexed[#goneIndexed + 1] = indexMember(job.key, job.due, job.id) end
          if job.source == "B" then
            goneSched[#goneSched + 1] = job.member
            takenSched[job.member] = true
          else
            goneReady[#goneReady + 1] = job.member
          end
        end
        if not ends then
          p.plan.taken = p.plan.taken + 1
          taken = taken + 1
          out[#out + 1] = job.id
          out[#out + 1] = attempt
          out[#out + 1] = job.due
          out[#out + 1] = record
        end
      else
        -- Left where it is: the caller moves it from the hash model, or drops it.
        orphans[#orphans + 1] = job.id
      end
    end
  end
  if taken > 0 or #lapsed > 0 then
    -- Writes first: the lease and the meta (or the expired job's end) exist before the id leaves its set.
    if taken > 0 then
      msetPairs(metaPairs)
      rcall("ZADD", leaseKey, unpack(leaseArgs))
      startedNotExpiring(leaseArgs)
    end
    expireJobs(lapsed, ARGV[1], finishKeys, keepExpired)
    if #gone > 0 then rcall("ZREM", dueKey, unpack(gone)) end
    if #goneKeyed > 0 then rcall("ZREM", fdueKey, unpack(goneKeyed)) end
    if #goneReady > 0 then rcall("ZREM", freadyKey, unpack(goneReady)) end
    if #goneSched > 0 then rcall("ZREM", fschedKey, unpack(goneSched)) end
    if #goneIndexed > 0 then rcall("ZREM", fkidxKey, unpack(goneIndexed)) end
    if taken > 0 then rcall("HINCRBY", metricsKey, "dispatched", taken) end
    if tokens and taken > 0 then
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
  -- A key served goes behind every key still waiting: a fraction of a millisecond past now, in the order served.
  local function behindWaiting(key)
    seq = seq + 1
    calArgs[#calArgs + 1] = now + seq / 1000
    calArgs[#calArgs + 1] = key
  end
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
        behindWaiting(key)
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
      behindWaiting(key)
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
        -- The default lane became ready with its oldest plain job, when that came first.
        local plainHead = key == "" and earliestScore(dueKey)
        args[#args + 1] = plainHead and plainHead < firstReady[key] and plainHead or firstReady[key]
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
