#!lua flags=allow-key-locking
--[[
  replay-dead: puts dead letters back on the schedule with fresh attempts —
  given ids, or a bounded step of a walk over the topic's letters (oldest
  first, within a failed-time window, whose error holds a text; lib/dead.lua)
  — and lowers the topic's score in the topic index to their earliest due
  time. A replayed job keeps its attempt history (in its meta, with 0
  attempts), so the attempts before the replay stay visible, and the replay
  adds a marker entry to it (outcome "replayed", its time, and the run it
  opens: lib/records.lua). Attempts count per run: the replayed job's start
  again at 1, each entry naming its run. Each job is due at ARGV[1] plus a random share of
  ARGV[2], so a large replay does not reach a recovering endpoint at once.

  KEYS[1]  dead-letter set zset id -> failed ms
  KEYS[2]  dead letters    hash id -> dead-letter entry JSON
  KEYS[3]  due zset        id -> due ms
  KEYS[4]  jobs hash       id -> record JSON
  KEYS[5]  meta hash       id -> {"a":attempts,"d":due ms,"e":last error,"s":claimed ms,"h":history}
  KEYS[6]  topic index     zset topic -> when the tick should next look at it (lib/index.lua)

  ARGV[1]  due time of the replayed jobs, epoch ms (the start of the spread)
  ARGV[2]  spread, ms: each job is due up to this much after ARGV[1] (0: all at ARGV[1])
  ARGV[3]  seed for the spread
  ARGV[4]  topic name
  ARGV[5]  most letters looked at by this call
  ARGV[6]  most bytes of entries read by this call (at least one batch of LUA_READ_BATCH is read)
  ARGV[7]  "walk" (ARGV[9…13]) or "ids" (ARGV[9…])
  ARGV[8]  now, epoch ms (the replay marker's time)
  with "walk":
  ARGV[9]  earliest failed time, or "-inf"
  ARGV[10] latest failed time, or "+inf"
  ARGV[11] position score: where the previous call stopped, or "" for the window's start
  ARGV[12] position id ("" without a position)
  ARGV[13] text the error must hold, "" for any
  with "ids": the job ids, each once, from ARGV[9] (at most ARGV[5])

  Returns  "walk": { replayed, 1 when the window may hold more else 0, position score, position id }
           "ids":  { replayed, how many of the given ids were handled (the caller sends the rest
                    again), then each handled id that is not a dead letter of the topic }
]]
-- @include index
-- @include position
-- @include dead
-- @include records
local rcall = redis.call
local atKey, entriesKey, dueKey, jobsKey, metaKey, indexKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local base, spread, topic = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[4]
local max, budget, mode, now = tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7], tonumber(ARGV[8])
math.randomseed(tonumber(ARGV[3]))

-- unpack() is limited to a few thousand values; large variadic calls go in slices.
local function callInSlices(command, key, args)
  for i = 1, #args, 4000 do
    rcall(command, key, unpack(args, i, math.min(i + 3999, #args)))
  end
end

-- Schedules the picked letters ({ id, parts }) and drops them from the dead letters.
local function replay(picked)
  if #picked == 0 then return 0 end
  local records, dues, metas, ids = {}, {}, {}, {}
  local earliest
  for _, p in ipairs(picked) do
    local due = base
    if spread > 0 then due = base + math.floor(math.random() * spread) end
    if earliest == nil or due < earliest then earliest = due end
    ids[#ids + 1] = p.id
    records[#records + 1] = p.id
    records[#records + 1] = p.parts.record
    dues[#dues + 1] = due
    dues[#dues + 1] = p.id
    -- The history is decoded only here, at most 25 entries a letter: the marker must go in, and the oldest out past the limit.
    local history = p.parts.history ~= "[]" and cjson.decode(p.parts.history) or nil
    metas[#metas + 1] = p.id
    metas[#metas + 1] = '{"a":0,"h":' .. historyJson(replayMarker(history, now)) .. '}'

  end
  callInSlices("HSET", jobsKey, records)
  callInSlices("ZADD", dueKey, dues)
  callInSlices("HSET", metaKey, metas)
  dropDead(atKey, entriesKey, ids)
  lowerIndex(indexKey, topic, earliest)
  return #picked
end

if mode == "walk" then
  local picked, score, id, more = walkDead(atKey, entriesKey, ARGV[9], ARGV[10], ARGV[11], ARGV[12], max, budget, ARGV[13])
  return { replay(picked), more and 1 or 0, score, id }
end

-- The caller gives each id once.
local wanted = {}
for i = 9, math.min(#ARGV, 8 + max) do wanted[#wanted + 1] = ARGV[i] end
local picked, missing, bytes, handled = {}, {}, 0, 0
while handled < #wanted and bytes <= budget do
  local slice = {}
  for j = handled + 1, math.min(handled + DEAD_READ_BATCH, #wanted) do slice[#slice + 1] = wanted[j] end
  local entries = rcall("HMGET", entriesKey, unpack(slice))
  for j, id in ipairs(slice) do
    local parts = entries[j] and deadEntryParts(entries[j])
    if parts then
      bytes = bytes + #entries[j]
      picked[#picked + 1] = { id = id, parts = parts }
    else
      missing[#missing + 1] = id
    end
  end
  handled = handled + #slice
end
local out = { replay(picked), handled }
for _, id in ipairs(missing) do out[#out + 1] = id end
return out
