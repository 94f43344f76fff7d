#!lua flags=allow-key-locking
--[[
  migrate-model: moves the given jobs from the hash model (one record hash,
  one meta hash and the done buckets for the whole deployment, a dead-letter
  hash per topic) into the per-job keys of today's model (src/queue/keys.ts).
  src/queue/model.ts calls it with batches of ids until the old hashes are
  empty (ensureModel), and with the due ids a claim found without a record
  (migrateOrphans: jobs an isolate of the old version enqueued since).

  Each id takes its newest state among the old places, as the old get.lua
  read them: the record hash (a live job, with its meta if it was claimed),
  else the done record of the current bucket, then of the previous one
  ({state, attempts, lastError, finishedAt, history, job}: record = the
  embedded job text, meta = finishedMeta, the id into the topic's done set
  at finishedAt), else the topic's dead-letter entry ({id, attempts,
  lastError, failedAt, history, job}: record + finishedMeta "dead"; the id
  is in dead:at already, at its failed time). A done record in state "dead"
  is left to the entry (the letter is there); one without an entry is a
  letter trimmed past the cap, and goes. Records are cut out of the old
  JSON by position, never decoded (cjson would round payload numbers).

  Writes before deletes: the new keys are written (SET NX: a key that exists
  already holds the newer state, written by today's model), then the id is
  dropped from every old place. So a repeat, or a second isolate migrating
  the same id, finds it gone and changes nothing: safe to repeat.
  An id found nowhere is left alone, unless the call drops orphans: then a
  due id without a record in either model leaves the due set (returned).

  Reads stop once the values read pass ARGV[2] bytes (always one id), so a
  call stays short whatever the payloads; the caller sends the rest again.

  KEYS[1]  old record hash      id -> record JSON (<p>:jobs)
  KEYS[2]  old meta hash        id -> meta JSON (<p>:meta)
  KEYS[3]  old done bucket      id -> done record JSON, the bucket of now
  KEYS[4]  old done bucket      the bucket of now - retention
  then per id i (5 keys each, from KEYS[5 + 5(i-1)]):
           job record key, job meta key (keys.job(id)), the topic's done zset,
           the topic's old dead-letter hash (dead:entries), the topic's due zset

  ARGV[1]  "1": drop due ids found nowhere (orphans); "0": leave them
  ARGV[2]  byte budget of the values one call reads
  ARGV[3…] job ids, in the order of their keys

  Returns  { ids dealt with (the first n of ARGV[3…]; the caller sends the rest again),
             ids given keys, then the ids dropped from their due set … }
]]
-- @include records
local rcall = redis.call
local dropOrphans = ARGV[1] == "1"
local budget = tonumber(ARGV[2])
local jobsKey, metaKey, doneNow, donePrev = KEYS[1], KEYS[2], KEYS[3], KEYS[4]

-- The text between the first `open` and the first `close` after it, or nil.
local function between(text, open, close, from)
  local a = string.find(text, open, from or 1, true)
  if not a then return nil end
  local b = string.find(text, close, a + #open, true)
  if not b then return nil end
  return string.sub(text, a + #open, b - 1), b
end

-- The parts of an old done record or dead-letter entry, by position: every
-- field before the history is small and holds no `"` unescaped, so the first
-- occurrence of each field name is the field; the record closes the JSON.
-- `timeField` is "finishedAt" or "failedAt". Nil when it holds no record.
local function oldParts(text, timeField)
  local attempts = string.match(text, '"attempts":(%d+),')
  local errorJson = between(text, ',"lastError":', ',"' .. timeField .. '":')
  local at = string.find(text, ',"job":', 1, true)
  local time = string.match(text, ',"' .. timeField .. '":(%d+)')
  if not (attempts and errorJson and at and time) then return nil end
  local record = string.sub(text, at + 7, -2)
  if record == "null" or record == "" then return nil end
  -- Entries written before histories were kept have none.
  local from = string.find(text, ',"history":', 1, true)
  local hist = (from and from < at) and string.sub(text, from + 11, at - 1) or "[]"
  return { attempts = attempts, errorJson = errorJson, time = time, hist = hist, record = record }
end

local ids = {}
for i = 3, #ARGV do ids[#ids + 1] = ARGV[i] end

local sets, doneAdds, dropped = {}, {}, {}
local looked, moved, bytes = 0, 0, 0
local entryDrops = {} -- per id i: its topic's dead-letter hash, when the id was looked at
while looked < #ids and (looked == 0 or bytes <= budget) do
  local i = looked + 1
  local id = ids[i]
  local base = 4 + 5 * (i - 1)
  local recordKey, jobMetaKey, doneKey, entriesKey, dueKey = KEYS[base + 1], KEYS[base + 2], KEYS[base + 3], KEYS[base + 4], KEYS[base + 5]
  looked = i
  entryDrops[#entryDrops + 1] = entriesKey
  -- A record in today's model wins: it is newer than any old copy (a second
  -- migration of the id, or a job today's model wrote). The old copies go.
  if rcall("EXISTS", recordKey) == 0 then
    local record, meta = nil, nil
    local doneState, doneTime = nil, nil
    local live = rcall("HGET", jobsKey, id)
    if live then
      record = live
      meta = rcall("HGET", metaKey, id) or nil
      bytes = bytes + #live
    else
      local done = rcall("HGET", doneNow, id) or rcall("HGET", donePrev, id)
      local state = done and string.match(done, '^{"state":"(%a+)"')
      if done then bytes = bytes + #done end
      if done and state ~= "dead" then
        local p = oldParts(done, "finishedAt")
        if p then
          record = p.record
          meta = finishedMeta(state, p.attempts, p.errorJson, p.time, p.hist)
          doneState, doneTime = state, p.time
        end
      else
        local entry = rcall("HGET", entriesKey, id)
        if entry then
          bytes = bytes + #entry
          local p = oldParts(entry, "failedAt")
          if p then
            record = p.record
            meta = finishedMeta("dead", p.attempts, p.errorJson, p.time, p.hist)
          end
        end
      end
    end
    if record then
      moved = moved + 1
      sets[#sets + 1] = { recordKey, record }
      if meta then sets[#sets + 1] = { jobMetaKey, meta } end
      if doneState then doneAdds[#doneAdds + 1] = { doneKey, doneTime, id } end
    elseif dropOrphans and not live and rcall("ZSCORE", dueKey, id) then
      -- Due, and no record in either model: nothing can ever run it.
      dropped[#dropped + 1] = { dueKey, id }
    end
  end
end

-- Writes first. SET NX, not MSET: each key is written only where it is
-- absent, so a key today's model wrote meanwhile keeps its newer value.
for _, kv in ipairs(sets) do rcall("SET", kv[1], kv[2], "NX") end
for _, add in ipairs(doneAdds) do rcall("ZADD", add[1], "NX", add[2], add[3]) end

-- Then the old copies, of every id looked at (moved, stale or unreadable),
-- so the callers' loops end; and the orphans' due entries.
local lookedIds = {}
for i = 1, looked do lookedIds[i] = ids[i] end
for i = 1, #lookedIds, 4000 do
  local slice = { unpack(lookedIds, i, math.min(i + 3999, #lookedIds)) }
  rcall("HDEL", jobsKey, unpack(slice))
  rcall("HDEL", metaKey, unpack(slice))
  rcall("HDEL", doneNow, unpack(slice))
  rcall("HDEL", donePrev, unpack(slice))
end
for i = 1, looked do rcall("HDEL", entryDrops[i], ids[i]) end
local reply = { looked, moved }
for _, d in ipairs(dropped) do
  rcall("ZREM", d[1], d[2])
  reply[#reply + 1] = d[2]
end
return reply
