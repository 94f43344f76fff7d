--[[
  records: what claim (reaping), settle and cancel write when an attempt
  fails or a job finishes, in one place. The two JSON documents are built by
  string concatenation so the job record (with its payload) is embedded as
  stored, never decoded and re-encoded (cjson would round numbers to 14 digits).
  src/queue/types.ts parses them (doneSchema, deadEntrySchema).

  The attempt history: each attempt that ended (or whose lease expired) adds
  one entry {"n":attempt,"t":started ms,"ms":duration,"o":outcome,"st":HTTP
  status,"e":error}, with outcome "ok", "retry", "dead", "expired" (the lease
  expired before the attempt settled; written by the claim that reaped it) or
  "stale" (an attempt settled after its lease had expired and the job had
  moved on). A dead-letter replay adds a marker {"n":0,"t":replayed ms,
  "o":"replayed","r":run}: attempts count per run (a replay starts them at 1
  again), and each entry carries its run in "r" (absent: run 1), taken from
  the entry before it, so a run costs no field outside the history and no
  byte on a job that was never replayed. A live job keeps its history in its meta ("h"), a finished job
  in its done record and a dead letter in its entry ("history"), so writing
  it costs no command of its own: it rides on the writes each transition
  makes anyway. Only the last HISTORY_LIMIT entries are kept.
  Included by scripts that say `-- @include records`.
]]

local HISTORY_LIMIT = --[[LIMIT:ATTEMPT_HISTORY_LIMIT]]25

-- Adds an attempt entry to a history (a Lua array, or nil for none), dropping the oldest beyond the limit.
local function appendAttempt(history, entry)
  local h = history or {}
  h[#h + 1] = entry
  if #h <= HISTORY_LIMIT then return h end
  local kept = {}
  for i = #h - HISTORY_LIMIT + 1, #h do kept[#kept + 1] = h[i] end
  return kept
end

-- The run a job is in: the last entry's (a replay marker opens a run), or nil for run 1.
local function runOf(history)
  local last = history and history[#history]
  return last and last.r or nil
end

-- An attempt entry with the run it belongs to (the history's so far).
local function inRun(entry, history)
  entry.r = runOf(history)
  return entry
end

-- A history with a replay's marker added: the next run, starting at `now`.
local function replayMarker(history, now)
  return appendAttempt(history, { n = 0, t = now, o = "replayed", r = (runOf(history) or 1) + 1 })
end

-- A history as JSON text; "[]" for none (cjson would encode an empty table as {}).
local function historyJson(history)
  if history == nil or #history == 0 then return "[]" end
  return cjson.encode(history)
end

-- A finished job, readable for the retention window. errorJson and histJson are JSON text ("null" for no error).
local function doneRecord(state, attempts, errorJson, nowText, histJson, record)
  return '{"state":"' .. state .. '","attempts":' .. attempts .. ',"lastError":' .. errorJson ..
    ',"finishedAt":' .. nowText .. ',"history":' .. histJson .. ',"job":' .. (record or "null") .. '}'
end

-- A dead-letter entry. The id opens it, the history comes just before the
-- record and the record closes it: replay-dead.lua relies on all three.
local function deadEntry(id, attempts, errorJson, nowText, histJson, record)
  return '{"id":"' .. id .. '","attempts":' .. attempts .. ',"lastError":' .. errorJson ..
    ',"failedAt":' .. nowText .. ',"history":' .. histJson .. ',"job":' .. (record or "null") .. '}'
end

-- The writes of a failed attempt that will be retried: back on the schedule
-- with its attempt count and error. dueArgs are score/id pairs, metaArgs id/meta pairs.
local function writeRetries(dueKey, metaKey, dueArgs, metaArgs)
  redis.call("ZADD", dueKey, unpack(dueArgs))
  redis.call("HSET", metaKey, unpack(metaArgs))
end

-- The writes of finished jobs: records dropped, done records (id/record pairs)
-- kept in the retention bucket, which expires as a whole.
local function writeFinished(jobsKey, metaKey, doneKey, doneTtl, ids, doneArgs)
  redis.call("HDEL", jobsKey, unpack(ids))
  redis.call("HDEL", metaKey, unpack(ids))
  redis.call("HSET", doneKey, unpack(doneArgs))
  redis.call("PEXPIRE", doneKey, doneTtl)
end

-- Most dead letters one push trims past the cap (a lowered cap is reached over several pushes).
local TRIM_LIMIT = 1000

-- Dead letters, by id, failed at nowText: into the topic's sorted set (id ->
-- failed ms) and hash (id -> entry); past the cap, the oldest go. A job that
-- dies again after a replay replaces its letter.
local function pushDead(deadAtKey, deadEntriesKey, ids, entries, nowText, cap)
  local scored, byId = {}, {}
  for i, id in ipairs(ids) do
    scored[#scored + 1] = nowText
    scored[#scored + 1] = id
    byId[#byId + 1] = id
    byId[#byId + 1] = entries[i]
  end
  redis.call("ZADD", deadAtKey, unpack(scored))
  redis.call("HSET", deadEntriesKey, unpack(byId))
  local over = math.min(redis.call("ZCARD", deadAtKey) - cap, TRIM_LIMIT)
  if over > 0 then
    local oldest = redis.call("ZRANGE", deadAtKey, 0, over - 1)
    redis.call("ZREMRANGEBYRANK", deadAtKey, 0, over - 1)
    redis.call("HDEL", deadEntriesKey, unpack(oldest))
  end
end
