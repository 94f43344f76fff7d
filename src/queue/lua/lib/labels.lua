--[[
  labels: a topic's label indexes (src/queue/keys.ts): per label a zset of
  the ids of the jobs carrying it (score 0, by lex: a topic's ids sort by
  their ULID, so in enqueue order), and the set of labels whose index exists.
  Only labelled jobs are written here, so an unlabelled job costs nothing.

  Members leave lazily, not when their job finishes: the scripts that finish
  jobs (settle, cancels, drops, sweeps, purges) would need every label's
  index in KEYS, which only a read of the record could tell them. A member
  is live while its id is in one of its topic's due, fdue, lease or dead:at
  sets (dead letters stay findable by label until replayed or purged); any
  other is stale. Walks by a label drop the stale members they pass
  (label-page.lua), and every enqueue that adds jobs to an index checks
  LABEL_TRIM_PROBES members at random per job it adds and drops the stale
  ones, so an index holds about its live members twice at most, whatever
  it has seen (a job finishing makes one stale member; each one added takes
  away stale ones in proportion to their share).
  Included by scripts that say `-- @include labels`.
]]

-- The labels of a record (its first field, "labels", as src/queue/jobs.ts writes it), without decoding the payload.
local function recordLabels(record)
  local list = {}
  local text = record and string.match(record, '^{"labels":%[([^%]]*)%]')
  if text then
    for label in string.gmatch(text, '"([^"]+)"') do list[#list + 1] = label end
  end
  return list
end

-- Which of `ids` are stale: in none of the topic's live sets (`live`: due, fdue, lease, dead:at keys).
local function staleOf(ids, live)
  local stale = {}
  if #ids == 0 then return stale end
  local found = {}
  for _, setKey in ipairs(live) do
    local scores = redis.call("ZMSCORE", setKey, unpack(ids))
    for j = 1, #ids do
      if scores[j] then found[j] = true end
    end
  end
  for j, id in ipairs(ids) do
    if not found[j] then stale[#stale + 1] = id end
  end
  return stale
end

-- Drops `stale` from a label's index; an index emptied leaves the topic's label set.
local function dropStale(indexKey, labelsKey, label, stale)
  if #stale == 0 then return end
  redis.call("ZREM", indexKey, unpack(stale))
  if redis.call("EXISTS", indexKey) == 0 then redis.call("SREM", labelsKey, label) end
end

-- Adds each group's ids to its label's index ({ indexKey, labelsKey, label, ids, live }: `live` its topic's live
-- sets), then checks LABEL_TRIM_PROBES random members per id added and drops the stale: the probes of one
-- topic's labels are checked together, four ZMSCOREs a topic whatever its labels.
local function indexLabels(groups)
  local byTopic, topics = {}, {}
  for _, g in ipairs(groups) do
    local members = {}
    for _, id in ipairs(g.ids) do
      members[#members + 1] = 0
      members[#members + 1] = id
    end
    redis.call("ZADD", g.indexKey, unpack(members))
    redis.call("SADD", g.labelsKey, g.label)
    g.probes = redis.call("ZRANDMEMBER", g.indexKey, --[[LIMIT:LABEL_TRIM_PROBES]]2 * #g.ids)
    local t = byTopic[g.live[1]]
    if not t then
      t = { live = g.live, ids = {}, seen = {} }
      byTopic[g.live[1]] = t
      topics[#topics + 1] = t
    end
    for _, id in ipairs(g.probes) do
      if not t.seen[id] then
        t.seen[id] = true
        t.ids[#t.ids + 1] = id
      end
    end
  end
  for _, t in ipairs(topics) do
    t.stale = {}
    for _, id in ipairs(staleOf(t.ids, t.live)) do t.stale[id] = true end
  end
  for _, g in ipairs(groups) do
    local stale = {}
    for _, id in ipairs(g.probes) do
      if byTopic[g.live[1]].stale[id] then stale[#stale + 1] = id end
    end
    dropStale(g.indexKey, g.labelsKey, g.label, stale)
  end
end
