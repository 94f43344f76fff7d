#!lua flags=allow-key-locking
--[[
  replay-dead: puts dead letters back on the schedule with fresh attempts —
  given ids, or one step of a walk over the topic's letters (oldest first,
  within a failed-time window, whose error holds a text), whose ids the
  caller paged first (list-dead.lua) — and lowers the topic's score in the
  topic index to their earliest due time. Each id is re-checked: only a
  letter still in the dead-letter set with its meta's state "dead" is
  replayed (lib/dead.lua). Only metas are read and written: the record stays
  as enqueue wrote it. A replayed job keeps its attempt history (its meta
  becomes live again, with 0 attempts), so the attempts before the replay
  stay visible, and the replay adds a marker entry to it (outcome
  "replayed", its time, and the run it opens: lib/records.lua). Attempts
  count per run: the replayed job's start again at 1, each entry naming its
  run. Each job is due at ARGV[1] plus a random share of ARGV[2], so a large
  replay does not reach a recovering endpoint at once. Writes come first
  (metas, due set, index), the dead-letter set's ZREM last.

  KEYS[1]  dead-letter set zset id -> failed ms
  KEYS[2]  due zset        id -> due ms
  KEYS[3]  topic index     zset topic -> when the tick should next look at it (lib/index.lua)
  KEYS[4]  fdue zset       keyed jobs by id (lib/flow.lua): a letter whose meta names a flow key ("k")
  KEYS[5]  fsched zset     goes back by its key, as its retries did
  KEYS[6]  fkidx zset      (and into its key's index)
  KEYS[6+i] meta of job i  string: job meta JSON (lib/records.lua), for the i-th id in ARGV

  ARGV[1]  due time of the replayed jobs, epoch ms (the start of the spread)
  ARGV[2]  spread, ms: each job is due up to this much after ARGV[1] (0: all at ARGV[1])
  ARGV[3]  seed for the spread
  ARGV[4]  topic name
  ARGV[5]  most bytes of metas read by this call (at least one batch of LUA_READ_BATCH is read)
  ARGV[6]  "walk" (ARGV[8…]) or "ids" (ARGV[8…])
  ARGV[7]  now, epoch ms (the replay marker's time)
  with "walk":
  ARGV[8]  text the error must hold, "" for any
  ARGV[9]  1 when the window holds more letters after the paged ones, else 0
  ARGV[10…] the paged letters, oldest first: id, failed ms, id, failed ms, …
  with "ids": the job ids, each once, from ARGV[8]

  Returns  "walk": { replayed, 1 when the window may hold more else 0, position score, position id }
                   (the position: the last paged letter looked at)
           "ids":  { replayed, how many of the given ids were handled (the caller sends the rest
                    again), then each handled id that is not a dead letter of the topic }
]]
-- @include index
-- @include records
-- @include dead
-- @include flow
local rcall = redis.call
local atKey, dueKey, indexKey, fdueKey, fschedKey, fkidxKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local base, spread, topic = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[4]
local budget, mode, now = tonumber(ARGV[5]), ARGV[6], tonumber(ARGV[7])
math.randomseed(tonumber(ARGV[3]))

local function metaKeyOf(i) return KEYS[6 + i] end

-- Schedules the picked letters ({ i, id, meta }): their metas live again, then due, then out of the dead letters.
local function replay(picked)
  if #picked == 0 then return 0 end
  local dues, metas, ids, keyed = {}, {}, {}, keyedBatch()
  local earliest
  for _, p in ipairs(picked) do
    local due = base
    if spread > 0 then due = base + math.floor(math.random() * spread) end
    if earliest == nil or due < earliest then earliest = due end
    ids[#ids + 1] = p.id
    -- A keyed letter goes back by its key, as its retries did.
    addRetry(p.meta, due, p.id, dues, keyed)
    -- The marker goes in, and the oldest entry out past the limit.
    local history = p.meta.h
    if type(history) ~= "table" or #history == 0 then history = nil end
    metas[#metas + 1] = metaKeyOf(p.i)
    metas[#metas + 1] = '{"a":0,"h":' .. historyJson(replayMarker(history, now)) .. flowJsonOf(p.meta) .. '}'
  end
  msetPairs(metas)
  scheduleKeyed(fdueKey, fschedKey, fkidxKey, keyed)
  for i = 1, #dues, 4000 do
    rcall("ZADD", dueKey, unpack(dues, i, math.min(i + 3999, #dues)))
  end
  lowerIndex(indexKey, topic, earliest)
  for i = 1, #ids, 4000 do
    rcall("ZREM", atKey, unpack(ids, i, math.min(i + 3999, #ids)))
  end
  return #picked
end

if mode == "walk" then
  local ids, scores = idScorePairs(10)
  local picked, looked = pickDead(atKey, ids, metaKeyOf, budget, ARGV[8])
  local more = ARGV[9] == "1" or looked < #ids
  if looked == 0 then return { 0, 0, "", "" } end
  return { replay(picked), more and 1 or 0, scores[looked], ids[looked] }
end

-- The caller gives each id once.
local wanted = {}
for i = 8, #ARGV do wanted[#wanted + 1] = ARGV[i] end
local picked, handled, missing = pickDead(atKey, wanted, metaKeyOf, budget, "")
local out = { replay(picked), handled }
for _, id in ipairs(missing) do out[#out + 1] = id end
return out
