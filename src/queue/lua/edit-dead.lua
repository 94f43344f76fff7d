#!lua flags=allow-key-locking
--[[
  edit-dead: changes dead letters for a replay with edits, each re-checked
  (still in the dead-letter set, its meta's state "dead": lib/dead.lua).
  "record": writes each letter's new record (a new payload, target or
  webhook headers; the caller replays the letters next, replay-dead.lua) and
  adds an "edited" marker to its history. "move": the letter was replayed
  into another topic as a new job (the caller enqueued it first): the letter
  is finished as "moved", into the done set (swept after the retention
  window, as a cancelled job), with a "moved" marker naming the new job.
  Markers: {"n":0,"t":now,"o":"edited"|"moved","c":[fields changed],"to":new id
  (moved),"r":run} (lib/records.lua); the history stays bounded. Metas are
  read within a byte budget, as a replay reads them: the caller sends the
  ids not handled again. Writes come first (records, metas, done set), the
  dead-letter set's ZREM last.

  KEYS[1]     dead-letter set  zset id -> failed ms
  KEYS[2]     done set         zset id -> finished ms
  KEYS[1+2i]  record of job i  string: job record JSON (src/queue/keys.ts jobPairs)
  KEYS[2+2i]  meta of job i    string: job meta JSON (lib/records.lua)

  ARGV[1]  "record" or "move"
  ARGV[2]  now, epoch ms (the markers' time; a moved job's finished time)
  ARGV[3]  the fields changed, a JSON array of names ("payload", "target", "webhookHeaders", "topic")
  ARGV[4]  most bytes of metas read by this call (at least one batch of LUA_READ_BATCH is read)
  ARGV[3+2i]  id of job i
  ARGV[4+2i]  "record": its new record JSON; "move": the id of its new job

  Returns  { how many of the ids were handled (the caller sends the rest again),
             then each handled id that was changed (still a dead letter of the topic) }
]]
-- @include records
-- @include dead
local rcall = redis.call
local atKey, doneKey = KEYS[1], KEYS[2]
local mode, nowText, changes, budget = ARGV[1], ARGV[2], cjson.decode(ARGV[3]), tonumber(ARGV[4])
local now = tonumber(nowText)
local move = mode == "move"

local ids = {}
for i = 5, #ARGV - 1, 2 do ids[#ids + 1] = ARGV[i] end
local function metaKeyOf(i) return KEYS[2 + 2 * i] end
local function valueOf(i) return ARGV[4 + 2 * i] end

local picked, handled = pickDead(atKey, ids, metaKeyOf, budget, "")
local metaPairs, records, changed = {}, {}, {}
for _, p in ipairs(picked) do
  local entry = { n = 0, t = now, o = move and "moved" or "edited", c = changes }
  if move then entry.to = valueOf(p.i) end
  local history = appendAttempt(p.meta.h, inRun(entry, p.meta.h))
  local lastError = type(p.meta.e) == "string" and cjson.encode(p.meta.e) or "null"
  metaPairs[#metaPairs + 1] = metaKeyOf(p.i)
  if move then
    metaPairs[#metaPairs + 1] = finishedMeta("moved", p.meta.a, lastError, nowText, historyJson(history))
  else
    -- Still a dead letter (dead, or expired and kept), failed when it failed, with its flow key for the replay.
    metaPairs[#metaPairs + 1] = finishedMeta(p.meta.st, p.meta.a, lastError, string.format("%d", p.meta.f), historyJson(history), flowJsonOf(p.meta))
    records[#records + 1] = KEYS[1 + 2 * p.i]
    records[#records + 1] = valueOf(p.i)
  end
  changed[#changed + 1] = p.id
end

if #changed > 0 then
  if #records > 0 then msetPairs(records) end
  if move then
    writeFinished(doneKey, nowText, changed, metaPairs)
    for i = 1, #changed, 4000 do
      rcall("ZREM", atKey, unpack(changed, i, math.min(i + 3999, #changed)))
    end
  else
    msetPairs(metaPairs)
  end
end
local out = { handled }
for _, id in ipairs(changed) do out[#out + 1] = id end
return out
