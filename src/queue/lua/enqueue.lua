#!lua flags=allow-key-locking
--[[
  enqueue: stores jobs and schedules them, one or a batch in one atomic call.
  A job with an idempotency key that was seen within the window is not stored
  again; its existing id is returned instead — unless the topic was purged
  since that job was made (the topic's purge mark, written by delete-topic.lua,
  is later than the id's ULID time) and the job is gone: a purge frees its
  keys, without deleting them one by one. Each topic's earliest new due
  time lowers its score in the topic index (lib/index.lua). Topics flagged
  "r" are registered; when that would take the registry past its cap,
  nothing is written. A keyed job (flag "k": a flow key, a priority, or
  both) goes to its topic's keyed sets instead of the due set
  (lib/flow.lua), and marks its topic shaped (conf "shaped"), so its claims
  serve keys in turn.

  KEYS[1]        topics set: topic registry
  KEYS[2]        topic index: zset topic -> when the tick should next look at it
  then for job i (i = 1..n), ten keys from KEYS[3 + 10(i-1)]:
                 due zset of its topic,
                 its idempotency key, or the due key again when the job has none,
                 purge mark of its topic: string, ms of its last purge (read only on a repeat),
                 its record key (string: record JSON),
                 the lease, done and dead-letter sets of its topic (read only on a repeat after a
                 purge: a job is gone when it is in none of its topic's five sets),
                 fdue and fsched of its topic (keyed jobs, lib/flow.lua), its topic's conf hash

  ARGV[1]        n, the number of jobs
  ARGV[2]        idempotency window, ms
  ARGV[3]        most topics the registry may hold
  then for job i, seven values from ARGV[4 + 7(i-1)]:
                 id, due time (epoch ms), record JSON, topic,
                 flags: "i" has an idempotency key, "r" register the topic, "k" keyed,
                 its flow key ("" none), its priority (0-9)

  Returns        a flat array, per job: id, deduplicated (1 repeat, 0 new), due time:
                 the one given for a new job; for a repeat, the existing job's while
                 it is scheduled, else -1 (in flight or finished);
                 or { -1, topics registered, the cap } when new topics would pass the cap
]]
-- @include index
-- @include flow
local rcall = redis.call
local topicsKey, indexKey = KEYS[1], KEYS[2]
local PER, ARGS = 10, 7
local n, window, maxTopics = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])

-- The ms a job id's ULID (its last 26 characters; the first 10 are the time) was made at, or nil.
local CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
local function idTime(id)
  local t = 0
  for c in string.gmatch(string.sub(id, -26, -17), ".") do
    local v = string.find(CROCKFORD, c, 1, true)
    if not v then return nil end
    t = t * 32 + (v - 1)
  end
  return t
end

-- Whether a repeat's job was made before its topic's last purge and is gone
-- (in none of the topic's sets, from KEYS[k…]): its key is then free.
local function purgedSince(existing, purgeKey, k)
  local mark = rcall("GET", purgeKey)
  if not mark then return false end
  local made = idTime(existing)
  if made == nil or made > tonumber(mark) then return false end
  for _, setKey in ipairs({ KEYS[k], KEYS[k + 4], KEYS[k + 5], KEYS[k + 6], KEYS[k + 7] }) do
    if rcall("ZSCORE", setKey, existing) then return false end
  end
  return true
end

-- The cap is checked before anything is written: a batch is all or nothing.
local register, newTopics = {}, 0
for i = 1, n do
  local a = 4 + ARGS * (i - 1)
  local topic = ARGV[a + 3]
  if string.find(ARGV[a + 4], "r", 1, true) and not register[topic] then
    register[topic] = true
    if rcall("SISMEMBER", topicsKey, topic) == 0 then newTopics = newTopics + 1 end
  end
end
if newTopics > 0 then
  local count = rcall("SCARD", topicsKey)
  if count + newTopics > maxTopics then return { -1, count, maxTopics } end
end

local out = {}
local records = {}
local dueByKey, dueKeys, topicOf, earliest = {}, {}, {}, {}
-- Keyed jobs: per fdue key its due/id pairs, its fsched key and due/member pairs, and its topic's conf key.
local keyedBy, keyedKeys = {}, {}

for i = 1, n do
  local a = 4 + ARGS * (i - 1)
  local id, due, record, topic, flags = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4]
  local k = 3 + PER * (i - 1)
  local dueKey, idemKey, purgeKey, recordKey = KEYS[k], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]
  local fdueKey = KEYS[k + 7]
  local existing = false
  if string.find(flags, "i", 1, true) then
    -- SET NX is the check and the claim in one command; only a repeat pays a GET (and the purge mark's).
    if not rcall("SET", idemKey, id, "NX", "PX", window) then
      existing = rcall("GET", idemKey)
      if existing and purgedSince(existing, purgeKey, k) then
        rcall("SET", idemKey, id, "PX", window)
        existing = false
      end
    end
  end
  if existing then
    out[#out + 1] = existing
    out[#out + 1] = 1
    -- The repeat's own due time would be a guess: the stored job's is the answer.
    out[#out + 1] = rcall("ZSCORE", dueKey, existing) or rcall("ZSCORE", fdueKey, existing) or -1
  else
    records[#records + 1] = recordKey
    records[#records + 1] = record
    -- A keyed job is indexed under its topic's due key all the same: the index learns the earliest of both.
    local scores = dueByKey[dueKey]
    if not scores then
      scores = {}
      dueByKey[dueKey] = scores
      dueKeys[#dueKeys + 1] = dueKey
      topicOf[dueKey] = topic
    end
    if string.find(flags, "k", 1, true) then
      local keyed = keyedBy[fdueKey]
      if not keyed then
        keyed = { due = {}, sched = {}, schedKey = KEYS[k + 8], confKey = KEYS[k + 9] }
        keyedBy[fdueKey] = keyed
        keyedKeys[#keyedKeys + 1] = fdueKey
      end
      keyed.due[#keyed.due + 1] = due
      keyed.due[#keyed.due + 1] = id
      keyed.sched[#keyed.sched + 1] = due
      keyed.sched[#keyed.sched + 1] = scheduledMember(ARGV[a + 5], ARGV[a + 6], id)
    else
      scores[#scores + 1] = due
      scores[#scores + 1] = id
    end
    local d = tonumber(due)
    if earliest[dueKey] == nil or d < earliest[dueKey] then earliest[dueKey] = d end
    out[#out + 1] = id
    out[#out + 1] = 0
    out[#out + 1] = due
  end
end

if #records > 0 then
  -- The records before their ids are due: a claim never finds a due id without its record.
  for j = 1, #records, 4000 do rcall("MSET", unpack(records, j, math.min(j + 3999, #records))) end
  -- A keyed job's id is known by id (fdue) before its key's set names it (fsched), and both before the index.
  for _, fdueKey in ipairs(keyedKeys) do
    local keyed = keyedBy[fdueKey]
    rcall("HSET", keyed.confKey, "shaped", "1")
    scheduleKeyed(fdueKey, keyed.schedKey, keyed.due, keyed.sched)
  end
  for _, dueKey in ipairs(dueKeys) do
    if #dueByKey[dueKey] > 0 then rcall("ZADD", dueKey, unpack(dueByKey[dueKey])) end
    lowerIndex(indexKey, topicOf[dueKey], earliest[dueKey])
  end
end
local topics = {}
for topic in pairs(register) do topics[#topics + 1] = topic end
if #topics > 0 then rcall("SADD", topicsKey, unpack(topics)) end
return out
