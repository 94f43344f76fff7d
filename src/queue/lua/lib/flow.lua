--[[
  flow: what the scripts of a shaped topic share (docs/ARCHITECTURE.md,
  "Flow keys"). A shaped topic keeps its keyed jobs (a flow key, a priority,
  or both) apart from its plain due set:

    fdue    zset  id -> due ms, every keyed job scheduled or waiting (reads by id, listings)
    fsched  zset  "<key>\n<priority>\n<id>" -> due ms: keyed jobs not yet due (or due, their key neither
                  served yet nor in the calendar or parked: flow-read.lua)
    fready  zset  "<key>\n<eff>\n<priority>\n<id>" -> 0, by lex: due keyed jobs waiting for their key's
                  turn, in each key's start order: eff = due - priority * priorityStepMs (15 digits)
    fcal    zset  key -> its turn (<= now: ready, served in score order) or when its rate lets it start again
    fpark   zset  key -> 1 at its parallelism (out of the calendar until a settle frees a slot), 2 paused
    fin     hash  key -> jobs of the key in flight (absent: none); "<key>\tu" -> jobs it started in a
                  turn a claim's end cut short (the rest of that turn is the next claim's)
    ftat    zset  key -> the key's rate: its GCRA theoretical arrival time, ms (forgotten once passed:
                  forgetPastRates)
    fkeys   hash  key -> the key's own settings (JSON), overriding the topic's flow settings
    fkidx   zset  "<key>\n<due>\n<id>" -> 0, by lex: the key index, every job of a flow key scheduled or
                  waiting (due: 15 digits), so a key's range counts (ZLEXCOUNT) and pages its jobs in due
                  order; it mirrors fdue for the jobs that have a key (the default lane's are not in it)

  Flow keys hold no control character (the API refuses them), so "\n"
  separates the parts of a member and "[<key>\n" .. "(<key>\v" is exactly
  one key's range. The default lane, jobs with neither key nor priority, is
  the plain due set; its key in fcal is "" (as are prioritized jobs without
  a key in fsched and fready). Included by scripts that say
  `-- @include flow`.
]]

-- A member of fsched: the key and priority ride along so a claim can move it to fready without the record.
local function scheduledMember(key, priority, id)
  return key .. "\n" .. priority .. "\n" .. id
end

-- A member of fready: ordered by key, then by when the job may start relative to its peers.
local function readyMember(key, eff, priority, id)
  return key .. "\n" .. string.format("%015d", eff) .. "\n" .. priority .. "\n" .. id
end

-- A member of fkidx: a key's jobs in due order, then id order. `due` a number or its text.
local function indexMember(key, due, id)
  return key .. "\n" .. string.format("%015d", tonumber(due)) .. "\n" .. id
end

-- The job id of a member of fkidx: its last part.
local function idOfMember(member)
  return string.match(member, "[^\n]*$")
end

-- The start order of a due job: its due time less its priority's head start.
local function effectiveTime(due, priority, stepMs)
  return math.max(0, due - priority * stepMs)
end

-- How many rounds of turns one claim of `max` jobs gives the keys it serves,
-- whose weights sum to `total`: a key's turn is its weight times this, so a
-- claim serving few keys still fills up, and weights keep their ratio.
local function turnRounds(max, total)
  if total <= 0 then return 1 end
  return math.max(1, math.floor(max / total))
end

-- The topic's flow settings (its conf hash's "flow" JSON), with their defaults.
local DEFAULT_PRIORITY_STEP_MS = --[[LIMIT:DEFAULT_PRIORITY_STEP_MS]]10000
local function flowSettings(confFlow)
  local f = confFlow and cjson.decode(confFlow) or {}
  f.weight = tonumber(f.weight) or 1
  f.priorityStepMs = tonumber(f.priorityStepMs) or DEFAULT_PRIORITY_STEP_MS
  return f
end

-- When a shaped topic's default lane can next start a plain job: its due
-- set's head, or — the lane waiting for its turn in the calendar — that turn
-- (a claim before it takes none). Uses lib/index.lua's earliestScore.
local function laneNext(dueKey, fcalKey)
  local head = earliestScore(dueKey)
  local turn = head and redis.call("ZSCORE", fcalKey, "")
  if turn and tonumber(turn) > head then return tonumber(turn) end
  return head
end

-- Keyed jobs whose attempt ended: their keys' in-flight counts go down by
-- `ended` (key -> count); a key parked at its parallelism goes back into the
-- calendar behind the keys waiting there (at `now`). Returns whether a key
-- was unparked (a claim can start its jobs now).
local function releaseKeys(finKey, fparkKey, fcalKey, ended, now)
  local keys = {}
  for k in pairs(ended) do keys[#keys + 1] = k end
  if #keys == 0 then return false end
  local counts = redis.call("HMGET", finKey, unpack(keys))
  local parked = redis.call("ZMSCORE", fparkKey, unpack(keys))
  local set, gone, unpark, cal = {}, {}, {}, {}
  for i, k in ipairs(keys) do
    local left = (tonumber(counts[i]) or 0) - ended[k]
    if left > 0 then
      set[#set + 1] = k
      set[#set + 1] = left
    else
      gone[#gone + 1] = k
    end
    if parked[i] and tonumber(parked[i]) == 1 then
      unpark[#unpark + 1] = k
      cal[#cal + 1] = now
      cal[#cal + 1] = k
    end
  end
  if #set > 0 then redis.call("HSET", finKey, unpack(set)) end
  if #gone > 0 then redis.call("HDEL", finKey, unpack(gone)) end
  if #unpark > 0 then
    redis.call("ZREM", fparkKey, unpack(unpark))
    redis.call("ZADD", fcalKey, "NX", unpack(cal))
    return true
  end
  return false
end

-- What scheduleKeyed writes, gathered: due/id pairs (fdue), due/member pairs (fsched), 0/member pairs (fkidx).
local function keyedBatch()
  return { due = {}, sched = {}, idx = {} }
end

-- Adds a keyed job due at `at` to a keyedBatch: by id, by its key's schedule, and to its key's
-- index when it has a key (key "" is the default lane's prioritized jobs: not indexed).
local function addKeyed(keyed, key, priority, at, id)
  keyed.due[#keyed.due + 1] = at
  keyed.due[#keyed.due + 1] = id
  keyed.sched[#keyed.sched + 1] = at
  keyed.sched[#keyed.sched + 1] = scheduledMember(key, priority, id)
  if key ~= "" then
    keyed.idx[#keyed.idx + 1] = 0
    keyed.idx[#keyed.idx + 1] = indexMember(key, at, id)
  end
end

-- A retry at `at` of the job `id` whose meta is `meta`: a keyed job's (meta.k
-- names its key, "" the default lane) goes to `keyed` (a keyedBatch), a plain
-- job's to plain's due/id pairs. Returns whether it was keyed.
local function addRetry(meta, at, id, plain, keyed)
  if meta.k then
    addKeyed(keyed, meta.k, meta.p or 0, at, id)
    return true
  end
  plain[#plain + 1] = at
  plain[#plain + 1] = id
  return false
end

-- ZADD of score/member pairs in slices: unpack() is limited to a few thousand values.
local function zaddAll(key, pairs)
  for i = 1, #pairs, 4000 do
    redis.call("ZADD", key, unpack(pairs, i, math.min(i + 3999, #pairs)))
  end
end

-- Keyed jobs scheduled (enqueued, retried, replayed): by id in fdue, by key in fsched, and in
-- their keys' index (fkidx), in that order. `keyed` is a keyedBatch.
local function scheduleKeyed(fdueKey, fschedKey, fkidxKey, keyed)
  if #keyed.due == 0 then return end
  zaddAll(fdueKey, keyed.due)
  zaddAll(fschedKey, keyed.sched)
  if #keyed.idx > 0 then zaddAll(fkidxKey, keyed.idx) end
end

-- Takes a keyed job out of its key's sets (fsched and fready, and its key's
-- index) by its record (flowKey, priority) and due time: both schedule members
-- are named, as it is in one of them. A waiting member written under another
-- priority step than the topic's now is missed, and dropped by the claim that
-- finds its job gone; the index's member is exact (its key and due time).
local function unscheduleKeyed(recordJson, due, confKey, fschedKey, freadyKey, fkidxKey, id)
  local record = cjson.decode(recordJson)
  local key, priority = record.flowKey or "", tonumber(record.priority) or 0
  local step = flowSettings(redis.call("HGET", confKey, "flow")).priorityStepMs
  redis.call("ZREM", fschedKey, scheduledMember(key, priority, id))
  redis.call("ZREM", freadyKey, readyMember(key, effectiveTime(due, priority, step), priority, id))
  if key ~= "" then redis.call("ZREM", fkidxKey, indexMember(key, due, id)) end
  return key, priority
end

-- A key's rate time (ftat) at or before now says no more than none. Forgets
-- up to FLOW_RATE_FORGET_BATCH of those, earliest first, and returns when the
-- next one passes (now when more may have), or nil when none is left.
local FLOW_RATE_FORGET_BATCH = --[[LIMIT:FLOW_RATE_FORGET_BATCH]]1000
local function forgetPastRates(ftatKey, now)
  local head = redis.call("ZRANGE", ftatKey, 0, FLOW_RATE_FORGET_BATCH - 1, "WITHSCORES")
  local past = {}
  for i = 1, #head, 2 do
    local tat = tonumber(head[i + 1])
    if tat > now then
      if #past > 0 then redis.call("ZREM", ftatKey, unpack(past)) end
      return tat
    end
    past[#past + 1] = head[i]
  end
  if #past == 0 then return nil end
  redis.call("ZREM", ftatKey, unpack(past))
  if #past == FLOW_RATE_FORGET_BATCH then return now end
  return nil
end
