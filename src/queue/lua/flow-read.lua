#!lua flags=allow-key-locking
--[[
  flow-read: what a claim of a shaped topic may take or reap, read in one
  call before claim.lua, which checks every part of it again (a script
  cannot read keys it was not given, so the records and metas of the jobs
  named here reach claim.lua in its KEYS). Changes nothing.

  It names, from the topic's sets (lib/flow.lua):
  - the leases past their deadline (as a plain claim's read does);
  - keyed jobs newly due (fsched, by due time, at most ARGV[4] read) of the
    keys below, and of keys in the calendar or parked: claim.lua moves those
    it does not take to fready. Those of a key with neither stay in fsched
    until a claim comes to the key (so a key served once, as most are when
    keys are many, is read from fsched alone, never from fready);
  - the keys whose turn it is, in turn order, at most ARGV[2] of them (but
    FLOW_KEYS_MIN however few jobs the claim may take: a key first in turn
    whose rate or limits hold it back takes none, and the next can): keys
    in the calendar at or before now, and keys not in it that have newly
    due jobs (the default lane "" too, when the plain due set holds a due
    job), each placed by when it became ready (its earliest due job), so a
    key that was idle goes behind every key that was waiting before it;
  - for each of those keys, its jobs in start order (a due job's due time
    less its priority's head start), up to its turn (its weight times the
    rounds, turnRounds in lib/flow.lua; at most ARGV[2]) and one more, so
    claim.lua can tell a key with more from a drained one.

  KEYS[1]  due zset        plain jobs (the default lane): id -> due ms
  KEYS[2]  lease zset      id -> lease deadline ms
  KEYS[3]  conf hash       topic settings ("flow": the topic's flow settings JSON; "prioritized": enqueue.lua)
  KEYS[4..12] fdue, fsched, fready, fcal, fpark, fin, ftat, fkeys, fkidx (lib/flow.lua; fin, ftat and fkidx not read)

  ARGV[1]  now, epoch ms
  ARGV[2]  most jobs the claim may take (and keys served)
  ARGV[3]  most expired leases reaped per call
  ARGV[4]  most newly due keyed jobs read per call, and so moved to waiting (FLOW_PROMOTE_BATCH)
  ARGV[5]  due candidates read per job the default lane may take (CLAIM_CANDIDATES)

  Returns  { lease ids (array),
             newly due keyed jobs: flat key, priority, id, due (array),
             keys served: flat key, 1 in the calendar / 0 newly ready (array),
             their jobs: flat key, id, priority, due, source (array) —
               source "D" the plain due set, "B" newly due (fsched), or the job's start order (fready);
               the due time of a job in fready is "" (claim.lua reads it from fdue),
             the rounds of turns the claim gives the keys (a key's turn is its weight times them) }
]]
-- @include flow
local rcall = redis.call
local dueKey, leaseKey, confKey = KEYS[1], KEYS[2], KEYS[3]
local fschedKey, freadyKey, fcalKey, fparkKey, fkeysKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[11]
local now, max = tonumber(ARGV[1]), tonumber(ARGV[2])
local FLOW_KEYS_MIN = --[[LIMIT:FLOW_KEYS_MIN]]8
local promoteLimit, candidatesPer = tonumber(ARGV[4]), tonumber(ARGV[5])

local leases = rcall("ZRANGE", leaseKey, "-inf", now, "BYSCORE", "LIMIT", 0, tonumber(ARGV[3]))
if max <= 0 then return { leases, {}, {}, {}, 1 } end
local conf = rcall("HMGET", confKey, "flow", "prioritized")
local fs = flowSettings(conf[1])
-- A topic that never had a prioritized job: a job not yet read is due after those read, so starts after them.
local prioritized = conf[2] == "1"

-- The default lane's plain jobs now due.
local plain = rcall("ZRANGE", dueKey, "-inf", now, "BYSCORE", "WITHSCORES", "LIMIT", 0, max * candidatesPer)
-- The calendar's ready keys, in turn order (score, then key).
local keysMax = math.max(max, FLOW_KEYS_MIN)
local cal = rcall("ZRANGE", fcalKey, "-inf", now, "BYSCORE", "WITHSCORES", "LIMIT", 0, keysMax)
local inCal = {}
for i = 1, #cal, 2 do inCal[cal[i]] = true end

-- Newly due keyed jobs, grouped by key (each key's in due order, its members and due times as read: only
-- those claim.lua is told of are taken apart), keys in the order of their first (due time, then key).
-- Keys whose newly due jobs claim.lua is told of: to serve them, or to move them to waiting behind a key
-- in the calendar or parked. A key with none of these keeps its jobs where they are until a turn comes
-- to it, which saves reading its waiting jobs back then (a key of one job: never).
local newly, newlyOrder, told = {}, {}, {}
-- Keys not in the calendar's read that have newly due jobs and are neither in the calendar nor parked;
-- whether the default lane is such a key (its plain jobs due, or its newly due ones); whether any key waits.
local fresh, checked, laneReady, heldBack = {}, 0, false, false
-- Reads `count` newly due jobs from `offset` on; returns how many, and the last one's key.
local function readScheduled(offset, count)
  local sched = rcall("ZRANGE", fschedKey, "-inf", now, "BYSCORE", "WITHSCORES", "LIMIT", offset, count)
  for i = 1, #sched, 2 do
    local member = sched[i]
    local key = string.sub(member, 1, string.find(member, "\n", 1, true) - 1)
    local list = newly[key]
    if not list then
      list = { first = tonumber(sched[i + 1]) }
      newly[key] = list
      newlyOrder[#newlyOrder + 1] = key
    end
    list[#list + 1] = member
    list[#list + 1] = sched[i + 1]
  end
  -- A key already in the calendar (later than now) or parked is not newly ready: its jobs wait for its turn.
  local check = {}
  for j = checked + 1, #newlyOrder do
    if not inCal[newlyOrder[j]] then check[#check + 1] = newlyOrder[j] end
  end
  checked = #newlyOrder
  if offset == 0 and #plain > 0 and not inCal[""] and not newly[""] then check[#check + 1] = "" end
  if #check > 0 then
    local calScores = rcall("ZMSCORE", fcalKey, unpack(check))
    local parked = rcall("ZMSCORE", fparkKey, unpack(check))
    for i, key in ipairs(check) do
      if calScores[i] or parked[i] then
        told[key] = true
        heldBack = true
      elseif key == "" then
        laneReady = true
      else
        fresh[key] = true
      end
    end
  end
  local last = sched[#sched - 1]
  return #sched / 2, last and string.sub(last, 1, string.find(last, "\n", 1, true) - 1)
end
-- The default lane, newly ready, turns up by the earlier of its newly due jobs and the plain due set's head.
local function laneTurn()
  if not laneReady then return nil end
  local first = newly[""] and newly[""].first
  if #plain > 0 and (first == nil or tonumber(plain[2]) < first) then first = tonumber(plain[2]) end
  return { key = "", score = first, cal = 0 }
end

-- Turn order, at most keysMax: the calendar's ready keys and the keys newly ready, merged by score (ties: key
-- order, as in the calendar), each list in that order already; the default lane where its score puts it.
local function turnOrder()
  local turns, lane = {}, laneTurn()
  local ci, ri = 1, 1
  while ri <= #newlyOrder and not fresh[newlyOrder[ri]] do ri = ri + 1 end
  while #turns < keysMax do
    local c = cal[ci] and { key = cal[ci], score = tonumber(cal[ci + 1]), cal = 1 } or false
    local r = newlyOrder[ri] and { key = newlyOrder[ri], score = newly[newlyOrder[ri]].first, cal = 0 } or false
    local best = nil
    for _, t in pairs({ c, r, lane or false }) do
      if t and (best == nil or t.score < best.score or (t.score == best.score and t.key < best.key)) then best = t end
    end
    if best == nil then break end
    turns[#turns + 1] = best
    if best == c then
      ci = ci + 2
    elseif best == r then
      ri = ri + 1
      while ri <= #newlyOrder and not fresh[newlyOrder[ri]] do ri = ri + 1 end
    else
      lane = nil
    end
  end
  return turns
end

-- A first look, enough to fill the claim with keys of a job or two; the rest of the batch only when that
-- falls short, holds jobs of keys that wait (whose jobs must move out of the way of the keys behind), or
-- serves the key of its last job, which may have more due with it just past the look (served from the
-- look alone, it would come back as newly ready, ahead of the keys waiting, instead of behind them), or
-- the topic has prioritized jobs: one due just past the look may start before those in it, by its priority.
local firstLook = math.min(promoteLimit, 2 * keysMax)
local seen, tail = readScheduled(0, firstLook)
local unseen = seen == firstLook
local turns = turnOrder()
local function serves(key)
  for _, t in ipairs(turns) do
    if t.key == key then return true end
  end
  return false
end
if unseen and firstLook < promoteLimit and (heldBack or prioritized or #turns < keysMax or serves(tail)) then
  seen = seen + readScheduled(firstLook, promoteLimit - firstLook)
  unseen = seen == promoteLimit
  turns = turnOrder()
end
for key in pairs(inCal) do told[key] = true end
for _, t in ipairs(turns) do told[t.key] = true end

-- A newly due job as read: its priority and id from its member.
local function newlyJob(member, due)
  local priority, id = string.match(member, "^.-\n(%d+)\n(.+)$")
  return { id = id, priority = tonumber(priority), due = tonumber(due) }
end
local promoted = {}
for _, key in ipairs(newlyOrder) do
  if told[key] then
    local list = newly[key]
    for i = 1, #list, 2 do
      local job = newlyJob(list[i], list[i + 1])
      promoted[#promoted + 1] = key
      promoted[#promoted + 1] = job.priority
      promoted[#promoted + 1] = job.id
      promoted[#promoted + 1] = job.due
    end
  end
end

local served, jobs, rounds = {}, {}, 1
if #turns > 0 then
  local keyNames = {}
  for j, t in ipairs(turns) do keyNames[j] = t.key end
  local overrides = rcall("HMGET", fkeysKey, unpack(keyNames))
  local weights, total = {}, 0
  for j in ipairs(turns) do
    local own = overrides[j] and cjson.decode(overrides[j]) or {}
    weights[j] = tonumber(own.weight) or fs.weight
    total = total + weights[j]
  end
  -- Turns stretch to fill the claim only when no key is left unseen: none beyond the calendar's read, none still to move.
  if #cal / 2 < keysMax and not unseen then rounds = turnRounds(max, total) end
  for j, t in ipairs(turns) do
    local key = t.key
    local want = math.min(weights[j] * rounds, max) + 1
    local list = {}
    if t.cal == 1 then
      local ready = rcall("ZRANGEBYLEX", freadyKey, "[" .. key .. "\n", "(" .. key .. "\v", "LIMIT", 0, want)
      for _, member in ipairs(ready) do
        local eff, priority, id = string.match(member, "^.-\n(%d+)\n(%d+)\n(.+)$")
        list[#list + 1] = { id = id, priority = tonumber(priority), due = "", eff = tonumber(eff), source = eff }
      end
    end
    local own = newly[key] or {}
    for i = 1, #own, 2 do
      local job = newlyJob(own[i], own[i + 1])
      list[#list + 1] = { id = job.id, priority = job.priority, due = job.due, eff = effectiveTime(job.due, job.priority, fs.priorityStepMs), source = "B" }
    end
    if key == "" then
      -- Plain jobs compete with other claims of the topic for the same ids: read more of them, as a plain claim does.
      want = math.max(want, math.min(weights[j] * rounds, max) * candidatesPer)
      for i = 1, #plain, 2 do
        list[#list + 1] = { id = plain[i], priority = 0, due = tonumber(plain[i + 1]), eff = tonumber(plain[i + 1]), source = "D" }
      end
    end
    table.sort(list, function(x, y)
      if x.eff ~= y.eff then return x.eff < y.eff end
      return x.id < y.id
    end)
    served[#served + 1] = key
    served[#served + 1] = t.cal
    for i = 1, math.min(#list, want) do
      local job = list[i]
      jobs[#jobs + 1] = key
      jobs[#jobs + 1] = job.id
      jobs[#jobs + 1] = job.priority
      jobs[#jobs + 1] = job.due
      jobs[#jobs + 1] = job.source
    end
  end
end
return { leases, promoted, served, jobs, rounds }
