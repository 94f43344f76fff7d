#!lua flags=allow-key-locking
--[[
  enqueue: stores jobs and schedules them, one or a batch in one atomic call. A job with an idempotency key that
  was seen within the window is not stored again; its existing id is returned instead — unless the topic was
  purged since that job was made (the topic's purge mark, written by delete-topic.lua, is later than the id's ULID
  time) and the job is gone: a purge frees its keys, without deleting them one by one. A key of mode "finished"
  (flag "f") holds only while its job lives — in its topic's due, fdue or lease set — and expires after the job's
  delay plus the window; a repeat that finds the job alive renews it to the window past the job's due time (or
  now, in flight). A job it names that has ended (whatever its state) leaves the key free, and the new job takes
  it. In a topic that dedups by content (its conf's contentDedupMs), a job with a content key (flag "c") that its
  idempotency key, if any, does not find repeated is a repeat of the job its content key names within the topic's
  window (the content key is then claimed as an idempotency key of mode window is), and its idempotency key then
  names that job too, marked "=<id>", so a retry gets the same answer: a repeat by content. Each topic's earliest
  new due time lowers its score in the topic index (lib/index.lua). Topics flagged "r" are registered; when that
  would take the registry past its cap, nothing is written. A keyed job (flag "k": a flow key, a priority, or
  both) goes to its topic's keyed sets instead of the due set (lib/flow.lua), and marks its topic shaped (conf
  "shaped"), so its claims serve keys in turn; one with a priority marks it "prioritized" too (which tells a claim
  that a job not yet read may start before those read). Neither mark is ever taken away (delete-topic.lua keeps
  them): a producer that saw a topic marked sends its keyed jobs by a pipeline, unmarked.

  Capped topics (lib/caps.lua): for each topic the caller names after the jobs, its maxLength, maxKeyLength and
  overflow are read (its conf) and checked against what the call adds (its new jobs: repeats of an idempotency key
  add none) and the topic's pending jobs (lib/pending.lua: its due set and keyed jobs), and each flow key's cap
  (its own maxKeyLength, else the topic's; a topic whose keys set their own is marked "keyCaps") against the key's
  pending jobs (its range of the keys' index, fkidx), keys first, before anything is written. A "reject" topic the
  jobs would take past a cap refuses the whole call; so does a "dropOldest" topic to which the call adds more jobs
  than a cap. Otherwise a "dropOldest" topic drops the key's oldest pending jobs (earliest due, ties in id order)
  and its own oldest (never the call's own) until each holds its cap, and at most as many as the call adds: each
  ends finished, state "dropped", with a "dropped" marker in its history (lib/records.lua), in the done set, and
  counts in the topic's "dropped" counter. A script cannot touch keys it was not given, so the caller reads the
  ids of the oldest pending jobs first (its candidates: the topic's, and each key's index members) and passes them
  with their meta keys; the script drops the oldest of those still pending (ZMSCORE: a job enqueued since the read
  is newer than all of them, and kept like the call's own), and when too few are left (other calls dropped or
  claimed them meanwhile), nothing is written and the reply names how many it drops.

  KEYS[1]        topics set: topic registry
  KEYS[2]        topic index: zset topic -> when the tick should next look at it
  then for job i (i = 1..n), thirteen keys from KEYS[3 + 13(i-1)]:
                 due zset of its topic,
                 its idempotency key, or the due key again when the job has none,
                 purge mark of its topic: string, ms of its last purge (read only on a repeat),
                 its record key (string: record JSON),
                 the lease, done and dead-letter sets of its topic (read only on a repeat after a
                 purge: a job is gone when it is in none of its topic's five sets; the done set also
                 takes the jobs a dropOldest topic drops),
                 fdue and fsched of its topic (keyed jobs, lib/flow.lua; fdue is one of the five sets),
                 its topic's conf hash,
                 its topic's fkidx (the flow keys' index, lib/flow.lua: a job with a flow key joins it),
                 its content key (flag "c"), or the due key again,
                 its topic's exp set (lib/expire.lua: a job with an expiresAt joins it, and marks the
                 topic's conf "expiring")
  then for checked topic c (c = 1..m, see ARGV), from KEYS[3 + 13n] on:
                 its conf hash (maxLength, overflow, maxKeyLength, keyCaps, contentDedupMs, expiring), its metrics hash ("dropped"
                 counter), its fkidx, its fkeys (each key's own maxKeyLength),
                 then the meta key and the record key of each of its kc candidates (a record is read
                 only for a keyed job dropped before its first claim: its flow key, to leave the index),
                 then the meta key of each candidate of each of its g key groups
  last, per label group g (g = 1..G, see ARGV): the label's index and its topic's label set (lib/labels.lua)

  ARGV[1]        n, the number of jobs
  ARGV[2]        idempotency window, ms
  ARGV[3]        most topics the registry may hold
  then for job i, eight values from ARGV[4 + 8(i-1)]:
                 id, due time (epoch ms), record JSON, topic,
                 flags: "i" has an idempotency key ("f" too: of mode "finished"), "c" has a content key
                 (its topic is checked: see below), "r" register the topic, "k" keyed,
                 its flow key ("" none), its priority (0-9), its expiresAt (epoch ms, "" none)
  ARGV[4 + 8n]   now, epoch ms (a dropped job's finished time)
  ARGV[5 + 8n]   m, the number of topics whose cap is checked
  then for topic c: its name, kc, then kc candidates: ids of its oldest pending jobs, oldest first
                 (a keyed one dropped leaves its topic's fdue and its key's index: the claim that
                 meets its key's schedule members finds it gone and drops them, lib/flow.lua);
                 then g, the number of key groups, and per group: its flow key, kg, then kg
                 candidates: the key's oldest index members ("<key>\n<due>\n<id>"), oldest first
  then the labels' part, from ARGV[a] where a is the last argument: G, the number of label groups (a label of a topic), and per
                 group: its label, c, then the numbers i of the c jobs carrying it (a repeat of an idempotency
                 key is not indexed again); each group's two keys are the last 2G KEYS, in order
  ARGV[#ARGV]    where the labels' part starts

  Returns        a flat array, per job: id, deduplicated (1 repeat, 2 repeat by content, 0 new), due time:
                 the one given for a new job; for a repeat, the existing job's while
                 it is scheduled, else -1 (in flight or finished);
                 then per checked topic: its name, its cap (0 none, 1 reject, 2 dropOldest: the
                 overflow of its caps), which caps it has (0 none, 1 maxLength, 2 key caps, 3 both)
                 and its content dedup window, ms (0 none);
                 or { -1, topics registered, the cap } when new topics would pass the cap;
                 or { -2, topic, its pending jobs, its maxLength, jobs the call adds to it }
                 when a topic's cap refuses the call;
                 or { -4, topic, flow key, the key's pending jobs, its cap, jobs the call adds to it }
                 when a flow key's cap refuses the call;
                 or { -3, then per topic or key short of candidates: topic, flow key ("" the
                 topic's own), how many oldest to drop }
                 when too few of the candidates are still pending (nothing written)
]]
-- @include index
-- @include records
-- @include pending
-- @include flow
-- @include caps
-- @include labels
local rcall = redis.call
local topicsKey, indexKey = KEYS[1], KEYS[2]
local PER, ARGS = 13, 8
local n, window, maxTopics = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local nowText, m = ARGV[4 + ARGS * n], tonumber(ARGV[5 + ARGS * n])
local now = tonumber(nowText)

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

-- A finished-mode key's job while it lives (in its topic's due, fdue or lease set, from KEYS[k…]):
-- its due time, or false in flight; nil once it has ended, whatever its state.
local function liveDue(existing, k)
  local due = rcall("ZSCORE", KEYS[k], existing) or rcall("ZSCORE", KEYS[k + 7], existing)
  if due then return due end
  if rcall("ZSCORE", KEYS[k + 4], existing) then return false end
  return nil
end

-- How job i's idempotency key holds: "w" for the window, "f" while its job lives; nil: it has none.
local function keyMode(flags)
  if not string.find(flags, "i", 1, true) then return nil end
  return string.find(flags, "f", 1, true) and "f" or "w"
end

-- The content dedup window (ms) of job i's topic when the job has a content key; else nil.
local contentMs = {}
local function contentWindow(flags, topic)
  return string.find(flags, "c", 1, true) and contentMs[topic] or nil
end

-- Whether a key's existing job still holds it, for a key of `mode`.
local function holds(existing, mode, k)
  if mode == "f" then return liveDue(existing, k) ~= nil end
  return not purgedSince(existing, KEYS[k + 2], k)
end

-- The call's own new jobs by id -> due time: a repeat within the call finds its job before it is scheduled.
local made = {}

-- The job id a key holds, and how it came to (1 its own job, 2 a job the content matched: "=<id>").
local function heldId(value)
  if string.sub(value, 1, 1) == "=" then return string.sub(value, 2), 2 end
  return value, 1
end

-- Claims `key` for new job `id` (SET NX: the check and the claim in one command; only a repeat
-- pays a GET, and the purge mark's or the live sets'): false when it is free (now the job's),
-- else the job holding it, that job's due time (-1 in flight; nil: read it) and how (heldId).
local function claimKey(key, mode, ttl, id, k)
  if rcall("SET", key, id, "NX", "PX", ttl) then return false end
  local existing, how = heldId(rcall("GET", key))
  if made[existing] then return existing, made[existing], how end
  if mode == "f" then
    local live = liveDue(existing, k)
    if live ~= nil then
      rcall("PEXPIRE", key, math.max(tonumber(live) or now, now) - now + tonumber(window))
      return existing, live or -1, how
    end
  elseif not purgedSince(existing, KEYS[k + 2], k) then
    return existing, nil, how
  end
  rcall("SET", key, id, "PX", ttl)
  return false
end

-- The registry's cap is checked before anything is written: a batch is all or nothing.
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

-- The capped topics the caller names: their keys and candidates (lib/caps.lua).
local capped, checked = readCapped(m, 6 + ARGS * n, 3 + PER * n)
for _, t in ipairs(checked) do
  t.conf = rcall("HMGET", t.confKey, "maxLength", "overflow", "maxKeyLength", "keyCaps", "contentDedupMs", "expiring")
  t.hasCap = t.conf[1] or t.conf[3] or t.conf[4] == "1"
  contentMs[t.topic] = tonumber(t.conf[5])
end

-- What the call adds to each capped topic: its jobs but repeats (as the writes below will find them);
-- a checked topic without a cap counts nothing, and reads no key for it.
local seenKeys = {}
local function repeats(key, mode, k)
  if seenKeys[key] then return true end
  seenKeys[key] = true
  local value = rcall("GET", key)
  return value and holds(heldId(value), mode, k)
end
for i = 1, n do
  local a, k = 4 + ARGS * (i - 1), 3 + PER * (i - 1)
  local t = capped[ARGV[a + 3]]
  if t and t.hasCap then
    t.dueKey, t.doneKey, t.fdueKey, t.expKey = KEYS[k], KEYS[k + 5], KEYS[k + 7], KEYS[k + 12]
    local flags = ARGV[a + 4]
    local mode = keyMode(flags)
    local new = not (mode and repeats(KEYS[k + 1], mode, k))
    if new and contentWindow(flags, ARGV[a + 3]) then new = not repeats(KEYS[k + 11], "w", k) end
    if new then noteAdding(t, ARGV[a + 5]) end
  end
end

-- Each topic's caps are checked before anything is written: a call is all or nothing.
local short = {}
for _, t in ipairs(checked) do
  local conf = t.conf
  local cap, keyCap = tonumber(conf[1]), tonumber(conf[3])
  -- A topic with expiring jobs: the jobs it drops leave its exp set too (lib/caps.lua writeDrops).
  t.expiring = conf[6] == "1"
  local keyCapped = keyCap ~= nil or conf[4] == "1"
  -- No overflow set reads as "reject", as src/queue/topics.ts reads it.
  local drops = conf[2] == "dropOldest"
  t.capCode = (cap or keyCapped) and (drops and 2 or 1) or 0
  t.kinds = (cap and 1 or 0) + (keyCapped and 2 or 0)
  if keyCapped then
    local refused = checkKeyCaps(t, keyCap, drops, short)
    if refused then return refused end
  end
  if cap and t.adding > 0 then
    local refused = checkTopicCap(t, cap, drops, short)
    if refused then return refused end
  end
end
if #short > 0 then return { -3, unpack(short) } end

local out = {}
-- Job number -> true for each job stored (not a repeat): only they join their labels' indexes.
local stored = {}
local records = {}
local dueByKey, dueKeys, topicOf, earliest = {}, {}, {}, {}
-- Keyed jobs: per fdue key a keyedBatch (lib/flow.lua) with its fsched and fkidx keys and its topic's conf key.
local keyedBy, keyedKeys = {}, {}
-- Jobs with an expiresAt: per exp key, its topic's conf key and the scores to add.
local expiringBy, expiringKeys = {}, {}

for i = 1, n do
  local a = 4 + ARGS * (i - 1)
  local id, due, record, topic, flags = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4]
  local k = 3 + PER * (i - 1)
  local dueKey, idemKey, purgeKey, recordKey = KEYS[k], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]
  local fdueKey = KEYS[k + 7]
  local existing, existingDue, how = false, nil, 1
  local mode = keyMode(flags)
  local ttl = mode == "f" and tonumber(due) - now + tonumber(window) or window
  if mode then existing, existingDue, how = claimKey(idemKey, mode, ttl, id, k) end
  local contentTtl = not existing and contentWindow(flags, topic)
  if contentTtl then
    existing, existingDue = claimKey(KEYS[k + 11], "w", contentTtl, id, k)
    how = 2
    -- The idempotency key this call claimed names the job the content matched: a retry gets that answer.
    if existing and mode then rcall("SET", idemKey, "=" .. existing, "PX", ttl) end
  end
  if existing then
    out[#out + 1] = existing
    out[#out + 1] = how
    -- The repeat's own due time would be a guess: the stored job's is the answer.
    out[#out + 1] = existingDue or rcall("ZSCORE", dueKey, existing) or rcall("ZSCORE", fdueKey, existing) or -1
  else
    made[id] = due
    stored[i] = true
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
        keyed = keyedBatch()
        keyed.schedKey, keyed.confKey, keyed.idxKey = KEYS[k + 8], KEYS[k + 9], KEYS[k + 10]
        keyedBy[fdueKey] = keyed
        keyedKeys[#keyedKeys + 1] = fdueKey
      end
      addKeyed(keyed, ARGV[a + 5], ARGV[a + 6], due, id)
      if (tonumber(ARGV[a + 6]) or 0) > 0 then keyed.prioritized = true end
    else
      scores[#scores + 1] = due
      scores[#scores + 1] = id
    end
    if ARGV[a + 7] ~= "" then
      local exp = expiringBy[KEYS[k + 12]]
      if not exp then
        exp = { confKey = KEYS[k + 9], scores = {} }
        expiringBy[KEYS[k + 12]] = exp
        expiringKeys[#expiringKeys + 1] = KEYS[k + 12]
      end
      exp.scores[#exp.scores + 1] = ARGV[a + 7]
      exp.scores[#exp.scores + 1] = id
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
  -- A keyed job's id is known by id (fdue) before its key's sets name it (fsched, fkidx), and all before the index.
  for _, fdueKey in ipairs(keyedKeys) do
    local keyed = keyedBy[fdueKey]
    if keyed.prioritized then
      rcall("HSET", keyed.confKey, "shaped", "1", "prioritized", "1")
    else
      rcall("HSET", keyed.confKey, "shaped", "1")
    end
    scheduleKeyed(fdueKey, keyed.schedKey, keyed.idxKey, keyed)
  end
  -- The mark and the exp set before the ids are due: a claim that sees a job sees whether it may expire.
  for _, expKey in ipairs(expiringKeys) do
    rcall("HSET", expiringBy[expKey].confKey, "expiring", "1")
    rcall("ZADD", expKey, unpack(expiringBy[expKey].scores))
  end
  for _, dueKey in ipairs(dueKeys) do
    if #dueByKey[dueKey] > 0 then rcall("ZADD", dueKey, unpack(dueByKey[dueKey])) end
    lowerIndex(indexKey, topicOf[dueKey], earliest[dueKey])
  end
end
local topics = {}
for topic in pairs(register) do topics[#topics + 1] = topic end
if #topics > 0 then rcall("SADD", topicsKey, unpack(topics)) end

-- The drops, once the new jobs are stored (lib/caps.lua).
for _, t in ipairs(checked) do
  writeDrops(t, nowText, now)
  out[#out + 1] = t.topic
  out[#out + 1] = t.capCode
  out[#out + 1] = t.kinds
  out[#out + 1] = contentMs[t.topic] or 0
end

-- The stored jobs' labels, once the jobs are in their sets (lib/labels.lua).
local at = tonumber(ARGV[#ARGV])
local groups = tonumber(ARGV[at])
local keyAt = #KEYS - 2 * groups + 1
local labelled = {}
at = at + 1
for g = 1, groups do
  local label, c = ARGV[at], tonumber(ARGV[at + 1])
  local ids, k = {}, nil
  for j = at + 2, at + 1 + c do
    local i = tonumber(ARGV[j])
    if stored[i] then ids[#ids + 1] = ARGV[4 + ARGS * (i - 1)] end
    k = 3 + PER * (i - 1)
  end
  at = at + 2 + c
  if #ids > 0 then
    labelled[#labelled + 1] = { indexKey = KEYS[keyAt + 2 * (g - 1)], labelsKey = KEYS[keyAt + 2 * (g - 1) + 1], label = label, ids = ids,
      live = { KEYS[k], KEYS[k + 7], KEYS[k + 4], KEYS[k + 6] } }
  end
end
indexLabels(labelled)
return out
