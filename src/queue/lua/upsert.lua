#!lua flags=allow-key-locking
--[[
  upsert: stores a job under a job key (docs/ARCHITECTURE.md, "Job keys"):
  the key's pointer names the job id that holds it, and is checked against
  that job's state every time, so a pointer left behind by a job that
  finished, was cancelled, dropped, dead-lettered or swept never stands in
  for a job:

    - the job is pending (scheduled or waiting for a retry: in the due set,
      or a keyed job in fdue): "ignore" answers it unchanged; "replace" and
      "keepDue" rewrite its record (the caller's, with the replacements
      counted) and put it at the given due time ("keepDue": its own), by its
      new flow key and priority (lib/flow.lua); a job that had attempts
      starts a new run of them, its history marked "replaced" (lib/records.lua);
    - the job is in flight (leased), or the key is free: a new job is
      stored, as enqueue.lua stores one (registering its topic, held to its
      maxLength, and its flow key to its maxKeyLength, as "reject" whatever
      the overflow), and the pointer names it.
      A leased job is never rewritten: the new one waits behind it.

  A script is given every key it touches, so the caller reads the pointer
  first and passes that job's keys; when the pointer names another job by
  now, nothing is written and the caller reads it again.

  Labels (lib/labels.lua): a new job joins its labels' indexes; a replaced
  one takes the new labels, so it joins the indexes of those it lacked and
  leaves those of the labels it loses. Their indexes are the caller's to
  name, and it cannot know the pending job's labels before the call (they
  are in its record): when the job found carries a label the caller did not
  name, nothing is written and the reply names the labels, which the caller
  passes in its next call.

  KEYS[1]  the job key's pointer: string, the id of the job holding the key, then a line per label that job
           carries (written when it is stored, and by a replacement that changes them)
  KEYS[2]  topics set: topic registry
  KEYS[3]  topic index: zset topic -> when the tick should next look at it (lib/index.lua)
  KEYS[4]  due zset       id -> due ms
  KEYS[5]  lease zset     id -> lease deadline ms
  KEYS[6]  conf hash      topic settings: maxLength, the shaped and prioritized marks, the priority step;
                          a new job marks it "jobKeys" (its claims take none ahead: claim.lua)
  KEYS[7..9] fdue, fsched, fready of the topic (lib/flow.lua): a keyed job is scheduled by its key
  KEYS[10] the record of the job the caller found named (the new job's when none was)
  KEYS[11] that job's meta (lib/records.lua; absent before its first claim)
  KEYS[12] the new job's record
  KEYS[13] fkidx of the topic (lib/flow.lua): the keys' index, a keyed job with a flow key in it
  KEYS[14] fkeys of the topic: the flow key's own maxKeyLength (read only when the call checks caps)
  KEYS[15] exp zset of the topic (lib/expire.lua): the job's expiresAt; a replaced job takes the new one (or none)
  KEYS[16] dead:at of the topic (read only: a label's index keeps the members of dead letters, lib/labels.lua)
  KEYS[17] the topic's label set (lib/labels.lua)
  KEYS[18..17+N] the index of each of the new job's labels, then KEYS[18+N..17+N+M] of each other label named

  ARGV[1]  the pointer as the caller found it ("" none): the job's id, then its labels, a line each
  ARGV[2]  the new job's id
  ARGV[3]  the new job's due time, epoch ms
  ARGV[4]  the due time of the job found, replaced: the new one's, no later than its first enqueue plus maxWait
  ARGV[5]  record JSON: an object (its last field a string), which a replacement extends by "replacements"
  ARGV[6]  topic name
  ARGV[7]  on conflict with a pending job: "replace", "keepDue" or "ignore"
  ARGV[8]  flags: "r" register the topic, "c" check its caps (maxLength, the flow key's maxKeyLength), "k" the job is keyed
  ARGV[9]  its flow key ("" none)
  ARGV[10] its priority (0-9)
  ARGV[11] most topics the registry may hold
  ARGV[12] now, epoch ms
  ARGV[13] the new job's expiresAt, epoch ms ("" none): with one, the topic's conf is marked "expiring"
  ARGV[14] N, the number of the job's labels, then its N labels from ARGV[15]
  ARGV[15+N] M, the number of other labels named (those the job found was seen to carry), then those M labels

  Returns  { 1 created, id, due ms } — then, when the call checked the topic's caps,
             its cap (0 none, 1 reject, 2 dropOldest: the overflow of its caps)
             and which caps it has (0 none, 1 maxLength, 2 key caps, 3 both);
           { 2 replaced, id, due ms }; { 3 ignored, id, due ms };
           { 0 } the pointer names another job than the caller found (nothing written);
           { 4 labels, then the labels of the job found } it carries labels whose index the caller did not name (nothing written)
             — only when its pointer does not list them: one written before pointers carried labels;
           { -1, topics registered, the cap } when registering the topic would pass the cap;
           { -2, topic, its pending jobs, its maxLength, 1 } when its maxLength refuses the job;
           { -4, topic, flow key, its pending jobs, its maxKeyLength, 1 } when its flow key's cap refuses it
]]
-- @include index
-- @include records
-- @include pending
-- @include flow
-- @include caps
-- @include labels
local rcall = redis.call
local pointerKey, topicsKey, indexKey, dueKey, leaseKey, confKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local fdueKey, fschedKey, freadyKey, fkidxKey, fkeysKey = KEYS[7], KEYS[8], KEYS[9], KEYS[13], KEYS[14]
-- The pointer as the caller found it: the job's id, then a line per label the job carries (so a caller names their
-- indexes, and a replacement that drops labels needs no second call).
local pointed = ARGV[1]
local found, newId, topic, flags = string.match(pointed, "^[^\n]*"), ARGV[2], ARGV[6], ARGV[8]
local keyed = string.find(flags, "k", 1, true) ~= nil
local flowKey, priority = ARGV[9], tonumber(ARGV[10])

if (rcall("GET", pointerKey) or "") ~= pointed then return { 0 } end

-- Label -> its index key: the new job's labels (true), then the others the caller named (false).
local labelsKey, labelIndex, newLabels = KEYS[17], {}, {}
local nLabels = tonumber(ARGV[14])
for j = 1, nLabels do
  newLabels[#newLabels + 1] = ARGV[14 + j]
  labelIndex[ARGV[14 + j]] = { key = KEYS[17 + j], carried = true }
end
for j = 1, tonumber(ARGV[15 + nLabels]) do
  labelIndex[ARGV[15 + nLabels + j]] = { key = KEYS[17 + nLabels + j], carried = false }
end
-- What the pointer says after the id: the job's labels, a line each ("" none).
local labelLines = #newLabels > 0 and ("\n" .. table.concat(newLabels, "\n")) or ""
-- The job joins the indexes of the labels it gains (all of them: `before` empty), and leaves those of the labels it loses.
local function relabel(id, before)
  local had = {}
  for _, label in ipairs(before) do
    had[label] = true
    if not labelIndex[label].carried then dropStale(labelIndex[label].key, labelsKey, label, { id }) end
  end
  local live, gained = { dueKey, fdueKey, leaseKey, KEYS[16] }, {}
  for _, label in ipairs(newLabels) do
    if not had[label] then
      gained[#gained + 1] = { indexKey = labelIndex[label].key, labelsKey = labelsKey, label = label, ids = { id }, live = live }
    end
  end
  indexLabels(gained)
end

-- Where the job found stands: pending (its due time, by its key or plain), in flight, or gone.
local plainDue = found ~= "" and rcall("ZSCORE", dueKey, found)
local keyedDue = found ~= "" and not plainDue and rcall("ZSCORE", fdueKey, found)

-- The job's new place: out of its old key's sets (by its stored record), into the new key's or the due set;
-- its expiry first (the mark and the exp set before the id is due, as enqueue.lua writes them).
local function schedule(id, due, oldRecord)
  if ARGV[13] ~= "" then
    rcall("HSET", confKey, "expiring", "1")
    rcall("ZADD", KEYS[15], ARGV[13], id)
  elseif oldRecord and string.find(oldRecord, '"expiresAt":', 1, true) then
    -- Read as text, not decoded: a payload that holds the text costs one ZREM that finds nothing.
    rcall("ZREM", KEYS[15], id)
  end
  if keyedDue then
    unscheduleKeyed(oldRecord, tonumber(keyedDue), confKey, fschedKey, freadyKey, fkidxKey, id)
    if not keyed then rcall("ZREM", fdueKey, id) end
  end
  if keyed then
    if priority > 0 then
      rcall("HSET", confKey, "shaped", "1", "prioritized", "1")
    else
      rcall("HSET", confKey, "shaped", "1")
    end
    local batch = keyedBatch()
    addKeyed(batch, flowKey, priority, due, id)
    scheduleKeyed(fdueKey, fschedKey, fkidxKey, batch)
    if plainDue then rcall("ZREM", dueKey, id) end
  else
    rcall("ZADD", dueKey, due, id)
  end
  lowerIndex(indexKey, topic, tonumber(due))
end

if plainDue or keyedDue then
  local due = plainDue or keyedDue
  if ARGV[7] == "ignore" then return { 3, found, tonumber(due) } end
  if ARGV[7] == "replace" then due = ARGV[4] end
  local recordKey, metaKey = KEYS[10], KEYS[11]
  local oldRecord = rcall("GET", recordKey)
  local before, unnamed = recordLabels(oldRecord), {}
  for _, label in ipairs(before) do
    if not labelIndex[label] then unnamed[#unnamed + 1] = label end
  end
  if #unnamed > 0 then return { 4, unpack(unnamed) } end
  -- The count is the record's last field, written here: read without decoding the payload.
  local replaced = tonumber(string.match(oldRecord or "", ',"replacements":(%d+)}$')) or 0
  rcall("SET", recordKey, string.sub(ARGV[5], 1, -2) .. ',"replacements":' .. (replaced + 1) .. "}")
  local meta = rcall("GET", metaKey)
  if meta then rcall("SET", metaKey, replacedMeta(meta, tonumber(ARGV[12]))) end
  schedule(found, due, oldRecord)
  relabel(found, before)
  if string.sub(pointed, #found + 1) ~= labelLines then rcall("SET", pointerKey, found .. labelLines) end
  return { 2, found, tonumber(due) }
end

-- A new job: the key is free, or its job is in flight. The registry's and the topic's caps are checked before anything is written.
local reply = { 1, newId, tonumber(ARGV[3]) }
local register = string.find(flags, "r", 1, true) and rcall("SISMEMBER", topicsKey, topic) == 0
if register then
  local count = rcall("SCARD", topicsKey)
  if count + 1 > tonumber(ARGV[11]) then return { -1, count, tonumber(ARGV[11]) } end
end
if string.find(flags, "c", 1, true) then
  local conf = rcall("HMGET", confKey, "maxLength", "overflow", "maxKeyLength", "keyCaps")
  local cap, keyCap = tonumber(conf[1]), tonumber(conf[3])
  local keyCapped = keyCap ~= nil or conf[4] == "1"
  reply[4] = (cap or keyCapped) and (conf[2] == "dropOldest" and 2 or 1) or 0
  reply[5] = (cap and 1 or 0) + (keyCapped and 2 or 0)
  -- As enqueue.lua checks a topic's caps (lib/caps.lua), as "reject": an upsert drops no other job.
  local t = { topic = topic, dueKey = dueKey, fdueKey = fdueKey, fkidxKey = fkidxKey, fkeysKey = fkeysKey,
    adding = 0, keyAdding = {}, keyOrder = {}, candidatesOf = {}, keyDrops = {} }
  noteAdding(t, flowKey)
  local refused = (keyCapped and checkKeyCaps(t, keyCap, false, {})) or (cap and checkTopicCap(t, cap, false, {}))
  if refused then return refused end
end
-- The record before its id is due, as enqueue.lua writes it; the pointer once the job is stored. The topic is
-- marked as one with job keys, which its claims take none of ahead (claim.lua): a job leased before its due
-- time would turn the upserts meanwhile into a job behind it, and a debounce into one delivery a poll.
rcall("HSET", confKey, "jobKeys", "1")
rcall("SET", KEYS[12], ARGV[5])
plainDue, keyedDue = false, false
schedule(newId, ARGV[3])
relabel(newId, {})
if register then rcall("SADD", topicsKey, topic) end
rcall("SET", pointerKey, newId .. labelLines)
return reply
