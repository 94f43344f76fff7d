--[[
  records: what claim (reaping), settle and cancel write when an attempt
  fails or a job finishes, in one place. A job is two keys of its own
  (src/queue/keys.ts): its record, written at enqueue and never again but
  by an upsert that replaces it while it is pending (upsert.lua; never while
  it is leased) or a replay with edits while it is dead (edit-dead.lua), and its meta, written at each claim and settle. Finishing writes only the
  meta (finishedMeta, built by string concatenation) and the id into the
  topic's done or dead-letter set, so no payload is ever read or re-encoded
  to finish a job. src/queue/types.ts parses the metas (metaSchema).

  The attempt history: each attempt that ended (or whose lease expired) adds
  one entry {"n":attempt,"t":started ms,"ms":duration,"o":outcome,"st":HTTP
  status,"e":error}, with outcome "ok", "retry", "dead", "expired" (the lease
  expired before the attempt settled; written by the claim that reaped it) or
  "stale" (an attempt settled after its lease had expired and the job had
  moved on). A job dropped for its topic's maxLength (enqueue.lua) ends with a
  marker {"n":0,"t":dropped ms,"o":"dropped"}. A job that expired before it
  ever started (lib/expire.lua: its expiresAt, or its topic's maxLateness)
  ends with a marker {"n":0,"t":expired ms,"o":"expired"}: the same outcome
  name as a reaped lease's attempt, told apart by n, 0 for the marker and
  the attempt's number (1 or more) for the lease; the job's state is then
  "expired" too, which no attempt's end ever writes. A job waiting for a retry that
  an upsert replaced (upsert.lua) gets a marker {"n":0,"t":replaced ms,
  "o":"replaced","r":run} that opens a run, as a replay's does. A dead-letter replay adds a
  marker {"n":0,"t":replayed ms,
  "o":"replayed","r":run}; a replay with edits (edit-dead.lua) first adds
  {"n":0,"t":edited ms,"o":"edited","c":[fields changed]}, or, into another
  topic, ends the letter with {"n":0,"t":moved ms,"o":"moved","c":[…],
  "to":the new job's id}: attempts count per run (a replay starts them at 1
  again), and each entry carries its run in "r" (absent: run 1), taken from
  the entry before it, so a run costs no field outside the history and no
  byte on a job that was never replayed. The history lives in the job's
  meta ("h"), finished or not, so writing it costs no command of its own: it rides on the writes each transition
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

-- A history with a marker that opens the next run at `now`: a replay's ("replayed") or an upsert's ("replaced").
local function openRun(history, now, outcome)
  return appendAttempt(history, { n = 0, t = now, o = outcome, r = (runOf(history) or 1) + 1 })
end

-- A history with a replay's marker added: the next run, starting at `now`.
local function replayMarker(history, now)
  return openRun(history, now, "replayed")
end

-- The live meta (JSON) of a job waiting for a retry that an upsert replaced
-- (upsert.lua): its attempts start again in a new run, which a "replaced"
-- marker opens; its history and last error are kept. Its flow key and
-- priority are left to its next claim, which writes them from its new place.
local function replacedMeta(raw, now)
  local m = cjson.decode(raw)
  return cjson.encode({ a = 0, e = m.e, h = openRun(m.h, now, "replaced") })
end

-- A history as JSON text; "[]" for none (cjson would encode an empty table as {}).
local function historyJson(history)
  if history == nil or #history == 0 then return "[]" end
  return cjson.encode(history)
end

-- A finished job's meta: its state ("succeeded", "cancelled", "dropped", "expired", "moved" or "dead"),
-- attempts, last error, when it finished and its history. The record stays
-- in its own key, untouched: finishing writes no byte of the payload.
-- errorJson and histJson are JSON text ("null" for no error).
local function finishedMeta(state, attempts, errorJson, nowText, histJson, flowJson)
  return '{"st":"' .. state .. '","a":' .. attempts .. ',"e":' .. errorJson .. ',"f":' .. nowText .. ',"h":' .. histJson .. (flowJson or "") .. '}'
end

-- A keyed job's flow key and priority (lib/flow.lua), as finishedMeta's last
-- part: a dead letter keeps them, so a replay puts it back by its key. "" for a plain job.
local function flowJsonOf(meta)
  if meta == nil or meta.k == nil then return "" end
  return ',"k":' .. cjson.encode(meta.k) .. ',"p":' .. (tonumber(meta.p) or 0)
end

-- A pending job's meta as a finished one, in `state` ("cancelled", "dropped", "expired"):
-- raw is its live meta's JSON, or false before its first claim. Its attempts,
-- last error and history are kept, with `entry` (a marker, or nil) added.
local function finishPending(state, raw, nowText, entry)
  local attempts, lastError, history = 0, "null", nil
  if raw then
    local m = cjson.decode(raw)
    attempts, history = m.a or 0, m.h
    if type(m.e) == "string" then lastError = cjson.encode(m.e) end
  end
  if entry then history = appendAttempt(history, inRun(entry, history)) end
  return finishedMeta(state, attempts, lastError, nowText, historyJson(history))
end

-- Whether a meta (decoded, or nil) is a finished job's.
local function isFinished(meta)
  return type(meta) == "table" and meta.st ~= nil
end

-- MSET of key/value pairs in slices: unpack() is limited to a few thousand values.
local function msetPairs(pairs)
  for i = 1, #pairs, 4000 do
    redis.call("MSET", unpack(pairs, i, math.min(i + 3999, #pairs)))
  end
end

-- The writes of finished jobs: their metas (meta key / finishedMeta pairs),
-- then their ids into `setKey` at nowText — the topic's done set (succeeded,
-- cancelled, dropped), from which sweep.lua drops them past the retention window, or
-- its dead-letter set (state "dead"; a job that dies again after a replay
-- replaces its letter; the cap is kept by the topic's claims, overCap: a
-- script cannot drop keys it was not given).
local function writeFinished(setKey, nowText, ids, metaPairs)
  msetPairs(metaPairs)
  local scored = {}
  for _, id in ipairs(ids) do
    scored[#scored + 1] = nowText
    scored[#scored + 1] = id
  end
  redis.call("ZADD", setKey, unpack(scored))
end

-- The oldest dead letters past the cap (at most TRIM_LIMIT of them), which sweep.lua drops.
local TRIM_LIMIT = 1000
local function overCap(deadAtKey, cap)
  local over = math.min(redis.call("ZCARD", deadAtKey) - cap, TRIM_LIMIT)
  if over <= 0 then return {} end
  return redis.call("ZRANGE", deadAtKey, 0, over - 1)
end
