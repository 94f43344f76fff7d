#!lua flags=allow-key-locking
--[[
  flow-read: what a claim of a shaped topic may take or reap, read in one
  call before claim.lua, which checks every part of it again (a script
  cannot read keys it was not given, so the records and metas of the jobs
  named here reach claim.lua in its KEYS). Changes nothing.

  It names, from the topic's sets (lib/flow.lua):
  - the leases past their deadline (as a plain claim's read does);
  - keyed jobs newly due (fsched, by due time, at most ARGV[4]): claim.lua
    moves those it does not take to fready;
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
  KEYS[3]  conf hash       topic settings ("flow": the topic's flow settings JSON)
  KEYS[4..11] fdue, fsched, fready, fcal, fpark, fin, ftat, fkeys (lib/flow.lua; fin and ftat not read)

  ARGV[1]  now, epoch ms
  ARGV[2]  most jobs the claim may take (and keys served)
  ARGV[3]  most expired leases reaped per call
  ARGV[4]  most keyed jobs moved to waiting per call (FLOW_PROMOTE_BATCH)
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
local fs = flowSettings(rcall("HGET", confKey, "flow"))

-- Newly due keyed jobs, grouped by key (each key's in due order).
local promoted = {}
local newly, newlyOrder = {}, {}
local sched = rcall("ZRANGE", fschedKey, "-inf", now, "BYSCORE", "WITHSCORES", "LIMIT", 0, promoteLimit)
for i = 1, #sched, 2 do
  local member, due = sched[i], tonumber(sched[i + 1])
  local key, priority, id = string.match(member, "^(.-)\n(%d+)\n(.+)$")
  promoted[#promoted + 1] = key
  promoted[#promoted + 1] = priority
  promoted[#promoted + 1] = id
  promoted[#promoted + 1] = due
  local list = newly[key]
  if not list then
    list = { first = due }
    newly[key] = list
    newlyOrder[#newlyOrder + 1] = key
  end
  list[#list + 1] = { id = id, priority = tonumber(priority), due = due }
end

-- The default lane's plain jobs now due.
local plain = rcall("ZRANGE", dueKey, "-inf", now, "BYSCORE", "WITHSCORES", "LIMIT", 0, max * candidatesPer)

-- Turn order: the calendar's ready keys, then keys becoming ready, by score (ties: key order, as in the calendar).
local turns = {}
local keysMax = math.max(max, FLOW_KEYS_MIN)
local cal = rcall("ZRANGE", fcalKey, "-inf", now, "BYSCORE", "WITHSCORES", "LIMIT", 0, keysMax)
local inCal = {}
for i = 1, #cal, 2 do
  inCal[cal[i]] = true
  turns[#turns + 1] = { key = cal[i], score = tonumber(cal[i + 1]), cal = 1 }
end
local fresh = {}
for _, key in ipairs(newlyOrder) do
  if not inCal[key] then fresh[#fresh + 1] = key end
end
if #plain > 0 and not inCal[""] and not newly[""] then fresh[#fresh + 1] = "" end
if #fresh > 0 then
  -- A key already in the calendar (later than now) or parked is not newly ready: its jobs wait for its turn.
  local calScores = rcall("ZMSCORE", fcalKey, unpack(fresh))
  local parked = rcall("ZMSCORE", fparkKey, unpack(fresh))
  for i, key in ipairs(fresh) do
    if not calScores[i] and not parked[i] then
      local first = newly[key] and newly[key].first
      if key == "" and #plain > 0 and (first == nil or tonumber(plain[2]) < first) then first = tonumber(plain[2]) end
      turns[#turns + 1] = { key = key, score = first, cal = 0 }
    end
  end
end
table.sort(turns, function(x, y)
  if x.score ~= y.score then return x.score < y.score end
  return x.key < y.key
end)
for j = #turns, keysMax + 1, -1 do turns[j] = nil end

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
  if #cal / 2 < keysMax and #sched / 2 < promoteLimit then rounds = turnRounds(max, total) end
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
    for _, job in ipairs(newly[key] or {}) do
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
