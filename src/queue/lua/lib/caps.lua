--[[
  caps: enqueue.lua's capped topics (docs/ARCHITECTURE.md, "Capped
  topics"): a topic's maxLength over its pending jobs (lib/pending.lua), and
  each flow key's maxKeyLength — the key's own (its fkeys settings), else
  the topic's — over the key's pending jobs (its range of the keys' index,
  fkidx: lib/flow.lua), both under the topic's one overflow policy. A key's
  cap is checked before its topic's, which then counts what the keys drop.
  Included by enqueue.lua, and by upsert.lua (which checks its one new job
  as "reject"), after records, pending and flow.
]]

-- The capped topics the caller names, from ARGV[a] and KEYS[k] on (enqueue.lua's header): by name, and in order.
local function readCapped(m, a, k)
  local capped, checked = {}, {}
  for c = 1, m do
    local kc = tonumber(ARGV[a + 1])
    local t = {
      topic = ARGV[a], confKey = KEYS[k], metricsKey = KEYS[k + 1], fkidxKey = KEYS[k + 2], fkeysKey = KEYS[k + 3],
      ids = {}, metaOf = {}, recordOf = {}, adding = 0, keyAdding = {}, keyOrder = {}, candidatesOf = {}, keyDrops = {},
    }
    for j = 1, kc do
      local id = ARGV[a + 1 + j]
      t.ids[j] = id
      t.metaOf[id] = KEYS[k + 2 + 2 * j]
      t.recordOf[id] = KEYS[k + 3 + 2 * j]
    end
    a, k = a + 2 + kc, k + 4 + 2 * kc
    local groups = tonumber(ARGV[a])
    a = a + 1
    for _ = 1, groups do
      local key, kg = ARGV[a], tonumber(ARGV[a + 1])
      local members = {}
      for j = 1, kg do
        members[j] = ARGV[a + 1 + j]
        t.metaOf[idOfMember(members[j])] = KEYS[k + j - 1]
      end
      t.candidatesOf[key] = members
      a, k = a + 2 + kg, k + kg
    end
    capped[t.topic], checked[c] = t, t
  end
  return capped, checked
end

-- Notes a new job of the call for its capped topic `t`, and for its flow key ("" none: no key's cap).
local function noteAdding(t, key)
  t.adding = t.adding + 1
  if key == "" then return end
  if not t.keyAdding[key] then
    t.keyAdding[key] = 0
    t.keyOrder[#t.keyOrder + 1] = key
  end
  t.keyAdding[key] = t.keyAdding[key] + 1
end

-- The first `want` of a key's candidates (index members, oldest first) still in the index.
local function stillIndexed(fkidxKey, members, want)
  if #members == 0 then return {} end
  local scores = redis.call("ZMSCORE", fkidxKey, unpack(members))
  local out = {}
  for j, member in ipairs(members) do
    if #out == want then break end
    if scores[j] then out[#out + 1] = member end
  end
  return out
end

-- Each flow key the call adds jobs to, against its cap (its own maxKeyLength, else `topicCap`): the
-- refusal { -4, topic, key, its pending jobs, its cap, jobs the call adds to it }, or nil once every
-- key fits — a dropOldest topic's keys by dropping their oldest (t.keyDrops: index members), those
-- short of candidates noted in `short` (topic, key, how many to drop).
local function checkKeyCaps(t, topicCap, drops, short)
  if #t.keyOrder == 0 then return nil end
  local own = redis.call("HMGET", t.fkeysKey, unpack(t.keyOrder))
  for i, key in ipairs(t.keyOrder) do
    local cap = tonumber(own[i] and cjson.decode(own[i]).maxKeyLength) or topicCap
    local adding = t.keyAdding[key]
    if cap then
      local count = redis.call("ZLEXCOUNT", t.fkidxKey, "[" .. key .. "\n", "(" .. key .. "\v")
      local over = count + adding - cap
      if over > 0 then
        if not drops or adding > cap then return { -4, t.topic, key, count, cap, adding } end
        local want = math.min(over, adding)
        local got = stillIndexed(t.fkidxKey, t.candidatesOf[key] or {}, want)
        for _, member in ipairs(got) do t.keyDrops[#t.keyDrops + 1] = member end
        if #got < want then
          short[#short + 1] = t.topic
          short[#short + 1] = key
          short[#short + 1] = want
        end
      end
    end
  end
  return nil
end

-- The topic's maxLength against its pending jobs less what its keys drop: the refusal { -2, topic,
-- pending, cap, adding }, or nil once it fits — a dropOldest topic by dropping its oldest pending jobs
-- not dropped for their key (t.drop, t.dropKeyed, t.dueOf), noting in `short` when too few are left.
local function checkTopicCap(t, cap, drops, short)
  local pending = pendingCount(t.dueKey, t.fdueKey) - #t.keyDrops
  local over = pending + t.adding - cap
  if over <= 0 then return nil end
  if not drops or t.adding > cap then return { -2, t.topic, pending, cap, t.adding } end
  local want = math.min(over, t.adding)
  local excluded = {}
  for _, member in ipairs(t.keyDrops) do excluded[idOfMember(member)] = true end
  local picked, keyed, dueOf = oldestStillPending(t.dueKey, t.fdueKey, t.ids, want + #t.keyDrops)
  local isKeyed = {}
  for _, id in ipairs(keyed) do isKeyed[id] = true end
  t.drop, t.dropKeyed, t.dueOf = {}, {}, dueOf
  for _, id in ipairs(picked) do
    if #t.drop < want and not excluded[id] then
      t.drop[#t.drop + 1] = id
      if isKeyed[id] then t.dropKeyed[#t.dropKeyed + 1] = id end
    end
  end
  if #t.drop < want then
    short[#short + 1] = t.topic
    short[#short + 1] = ""
    short[#short + 1] = want
  end
  return nil
end

-- The index members of the keyed jobs a topic's cap drops: each one's key is its meta's (claimed
-- before) or its record's (read only for those); `metaOf` id -> its meta's JSON (or false).
local function droppedMembers(t, metaOf)
  local keyOf, unread = {}, {}
  for _, id in ipairs(t.dropKeyed) do
    local meta = metaOf[id] and cjson.decode(metaOf[id])
    if meta and meta.k then keyOf[id] = meta.k else unread[#unread + 1] = id end
  end
  if #unread > 0 then
    local recordKeys = {}
    for j, id in ipairs(unread) do recordKeys[j] = t.recordOf[id] end
    local records = redis.call("MGET", unpack(recordKeys))
    for j, id in ipairs(unread) do keyOf[id] = records[j] and cjson.decode(records[j]).flowKey or "" end
  end
  local members = {}
  for _, id in ipairs(t.dropKeyed) do
    if keyOf[id] ~= "" then members[#members + 1] = indexMember(keyOf[id], t.dueOf[id], id) end
  end
  return members
end

-- A capped topic's drops, once the call's jobs are stored: each meta finished as "dropped" (with its
-- marker), into the done set, then off the schedule (due set, fdue, the keys' index; the exp set of a topic
-- marked "expiring": lib/expire.lua), counted.
local function writeDrops(t, nowText, now)
  local ids, plain, keyed, members = {}, {}, {}, {}
  for _, id in ipairs(t.drop or {}) do ids[#ids + 1] = id end
  for _, member in ipairs(t.keyDrops) do
    ids[#ids + 1] = idOfMember(member)
    keyed[#keyed + 1] = ids[#ids]
    members[#members + 1] = member
  end
  if #ids == 0 then return end
  local metaKeys = {}
  for j, id in ipairs(ids) do metaKeys[j] = t.metaOf[id] end
  local metas = redis.call("MGET", unpack(metaKeys))
  local metaPairs, metaOf = {}, {}
  for j, id in ipairs(ids) do
    metaOf[id] = metas[j]
    metaPairs[#metaPairs + 1] = metaKeys[j]
    metaPairs[#metaPairs + 1] = finishPending("dropped", metas[j], nowText, { n = 0, t = now, o = "dropped" })
  end
  writeFinished(t.doneKey, nowText, ids, metaPairs)
  local isKeyed = {}
  for _, id in ipairs(t.dropKeyed or {}) do
    isKeyed[id] = true
    keyed[#keyed + 1] = id
  end
  for _, id in ipairs(t.drop or {}) do
    if not isKeyed[id] then plain[#plain + 1] = id end
  end
  if #plain > 0 then redis.call("ZREM", t.dueKey, unpack(plain)) end
  if #keyed > 0 then redis.call("ZREM", t.fdueKey, unpack(keyed)) end
  if t.dropKeyed and #t.dropKeyed > 0 then
    for _, member in ipairs(droppedMembers(t, metaOf)) do members[#members + 1] = member end
  end
  if #members > 0 then redis.call("ZREM", t.fkidxKey, unpack(members)) end
  if t.expiring and t.expKey then redis.call("ZREM", t.expKey, unpack(ids)) end
  redis.call("HINCRBY", t.metricsKey, "dropped", #ids)
end
