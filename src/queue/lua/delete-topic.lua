#!lua flags=allow-key-locking
--[[
  delete-topic: removes a topic with everything it holds — its settings,
  token bucket, metrics, jobs (each job's two keys: src/queue/keys.ts), its
  place in the registry, the topic index and the parked set — but only when
  it is empty: nothing in flight, and (unless purging) nothing scheduled and
  no dead letters. Its finished jobs (the done set) go with it either way.

  Jobs are dropped in batches, two phases each: every call names the next
  batch of ids it finds (scheduled jobs when purging, then dead letters when
  purging, then finished jobs), and the caller hands them back with their
  keys in the next call, which re-checks each id against its set, DELs the
  keys of those still there and ZREMs them. So no call holds Redis for long;
  the caller repeats the call until it answers 1 (or refuses). The topic's
  own keys go once its sets are empty, but for a shaped topic's marks (conf
  fields "shaped" and "prioritized", enqueue.lua), which stay. Each purging call marks the topic
  purged now (KEYS[11], kept for the idempotency window): enqueue.lua then
  treats the idempotency keys of jobs made before the mark that are gone as
  free, so purging touches no key of them.

  KEYS[1]  due zset        id -> due ms
  KEYS[2]  lease zset      id -> lease deadline ms
  KEYS[3]  dead-letter set zset id -> failed ms
  KEYS[4]  done zset       id -> finished ms (succeeded, cancelled)
  KEYS[5]  conf hash       topic settings
  KEYS[6]  bucket hash     token bucket
  KEYS[7]  metrics hash    counters, metrics vectors, per-minute series
  KEYS[8]  topics set      topic registry
  KEYS[9]  topic index     zset topic -> when the tick should next look at it
  KEYS[10] parked set      topics that are pull or paused
  KEYS[11] purge mark      string: ms of the topic's last purge
  KEYS[12..20] the topic's flow keys (lib/flow.lua): fdue, fsched, fready, fcal, fpark, fin, ftat, fkeys, fkidx;
           keyed jobs (fdue) are scheduled jobs like the due set's, dropped through their keys' index
           (fkidx) first, so it names each key's jobs exactly as long as they are there; the rest goes with the topic
  KEYS[21] exp zset        pending jobs with an expiry -> expiresAt (lib/expire.lua): a dropped job leaves it
  KEYS[20+2i] record of job i, KEYS[21+2i] meta of job i: the keys of the i-th id in ARGV[7…]

  ARGV[1]  topic name
  ARGV[2]  "1" to purge scheduled jobs and dead letters, "0" to refuse a topic that holds any
  ARGV[3]  most jobs named for the next batch
  ARGV[4]  now, ms (the purge mark)
  ARGV[5]  idempotency window, ms (how long the purge mark is kept)
  ARGV[6]  the set of the ids that follow: "due", "fkidx", "fdue", "dead" or "done" ("" with none)
  ARGV[7…] the batch this call drops: the ids the previous call named (fkidx: its members, each
           "<key>\n<due>\n<id>")

  Returns  { code, scheduled jobs dropped by this call, dead letters dropped by this call,
             scheduled jobs, in flight, dead letters (as found),
             the set of the next batch ("due", "fkidx", "fdue", "dead", "done"; "" with none), then its ids
             (fkidx: its members) }
           code: 1 deleted, 0 purging goes on (call again), -1 jobs in flight, -2 not empty
]]
local rcall = redis.call
local dueKey, leaseKey, deadKey, doneKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local purge, batch = ARGV[2] == "1", tonumber(ARGV[3])
local fdueKey, fkidxKey, expKey = KEYS[12], KEYS[20], KEYS[21]
local scheduled, inflight = rcall("ZCARD", dueKey) + rcall("ZCARD", fdueKey), rcall("ZCARD", leaseKey)
local dead = rcall("ZCARD", deadKey)
if inflight > 0 then return { -1, 0, 0, scheduled, inflight, dead, "" } end
if not purge and (scheduled > 0 or dead > 0) then return { -2, 0, 0, scheduled, inflight, dead, "" } end
if purge then rcall("SET", KEYS[11], ARGV[4], "PX", ARGV[5]) end

local setOf = { due = dueKey, fkidx = fkidxKey, fdue = fdueKey, dead = deadKey, done = doneKey }

-- Drops the members from ARGV[7] on that are still in `setKey`: their jobs' keys, then the members
-- (an index member's job leaves fdue with it). Returns how many.
local function dropBatch(setKey)
  local members = {}
  for i = 7, #ARGV do members[#members + 1] = ARGV[i] end
  if #members == 0 then return 0 end
  local scores = rcall("ZMSCORE", setKey, unpack(members))
  local jobKeys, present, ids = {}, {}, {}
  for i, member in ipairs(members) do
    if scores[i] then
      jobKeys[#jobKeys + 1] = KEYS[20 + 2 * i]
      jobKeys[#jobKeys + 1] = KEYS[21 + 2 * i]
      present[#present + 1] = member
      ids[#ids + 1] = string.match(member, "[^\n]*$")
    end
  end
  if #present == 0 then return 0 end
  for i = 1, #jobKeys, 4000 do
    rcall("DEL", unpack(jobKeys, i, math.min(i + 3999, #jobKeys)))
  end
  rcall("ZREM", setKey, unpack(present))
  if setKey == fkidxKey then rcall("ZREM", fdueKey, unpack(ids)) end
  if setKey ~= deadKey and setKey ~= doneKey then rcall("ZREM", expKey, unpack(ids)) end
  return #present
end

local dropped, droppedDead = 0, 0
local kind = ARGV[6]
if setOf[kind] then
  local n = dropBatch(setOf[kind])
  if kind == "due" or kind == "fkidx" or kind == "fdue" then dropped = n elseif kind == "dead" then droppedDead = n end
end

-- The next batch: scheduled jobs, then dead letters (both only when purging), then finished jobs.
for _, set in ipairs(purge and { "due", "fkidx", "fdue", "dead", "done" } or { "done" }) do
  local ids = rcall("ZRANGE", setOf[set], 0, batch - 1)
  if #ids > 0 then
    local out = { 0, dropped, droppedDead, scheduled, inflight, dead, set }
    for _, id in ipairs(ids) do out[#out + 1] = id end
    return out
  end
end

-- A shaped topic keeps its marks (and nothing else of its settings): a producer that saw them may still send its
-- keyed jobs by the pipeline, which does not mark the topic, and a plain claim would not see them.
local marks = rcall("HMGET", KEYS[5], "shaped", "prioritized")
rcall("DEL", dueKey, leaseKey, deadKey, doneKey, KEYS[5], KEYS[6], KEYS[7])
if marks[1] == "1" then rcall("HSET", KEYS[5], "shaped", "1", "prioritized", marks[2] or "0") end
rcall("DEL", KEYS[12], KEYS[13], KEYS[14], KEYS[15], KEYS[16], KEYS[17], KEYS[18], KEYS[19], KEYS[20], expKey)
rcall("SREM", KEYS[8], ARGV[1])
rcall("ZREM", KEYS[9], ARGV[1])
rcall("SREM", KEYS[10], ARGV[1])
return { 1, dropped, droppedDead, scheduled, inflight, dead, "" }
