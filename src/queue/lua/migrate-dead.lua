#!lua flags=allow-key-locking
--[[
  migrate-dead: moves dead letters from the list the oldest versions kept
  (newest first, each entry embedding its record: lib/dead.lua
  deadEntryParts) straight into the per-job model: per letter its record
  key (the embedded record, as stored), its meta key (lib/records.lua
  finishedMeta, state "dead") and its id in the dead-letter set, oldest
  first. The second phase: the caller read the list's tail (LRANGE) and
  parsed its ids, so it could hand their keys; this call checks the tail
  still holds those ids in that order (else it moves nothing: the caller
  reads again), moves the entries and trims them off. The dead-letter
  operations call it until the list is empty, so a deployment's old letters
  stay listed, replayable and purgeable. A letter the set already holds, or
  whose job has a meta (the job died again since), is the newer one and
  wins; an entry of another shape, or of another topic's id, is dropped.
  The id rule, both sides: the entry opens with {"id":"<id>", and an id of
  the topic is `<topic>.` and 26 characters.

  KEYS[1]  old dead list   dead-letter entries, newest first
  KEYS[2]  dead-letter set zset id -> failed ms
  KEYS[3…] record, meta   the keys (src/queue/keys.ts jobPairs) of each id in ARGV[2…] that is the topic's, in order

  ARGV[1]  topic name
  ARGV[2…] the ids of the list's last entries, oldest first, as the caller read them ("" for an entry without one)

  Returns  the entries the old list still holds after this call
]]
-- @include records
-- @include dead
local rcall = redis.call
local listKey, atKey, topic = KEYS[1], KEYS[2], ARGV[1]
local n = #ARGV - 1
if n == 0 then return rcall("LLEN", listKey) end
local tail = rcall("LRANGE", listKey, -n, -1)
if #tail ~= n then return rcall("LLEN", listKey) end

local prefix = topic .. "."
local entries, ids, keyAt = {}, {}, {}
local k = 3
for j = 1, n do
  local entry = tail[n - j + 1]
  local id = string.match(entry, '^{"id":"([^"]+)"') or ""
  -- The list changed since the caller read it: nothing is moved.
  if id ~= ARGV[j + 1] then return rcall("LLEN", listKey) end
  if #id == #prefix + 26 and string.sub(id, 1, #prefix) == prefix then
    entries[#entries + 1] = entry
    ids[#ids + 1] = id
    keyAt[#keyAt + 1] = k
    k = k + 2
  end
end

if #ids > 0 then
  local kept = rcall("ZMSCORE", atKey, unpack(ids))
  local metaKeys = {}
  for i = 1, #ids do metaKeys[i] = KEYS[keyAt[i] + 1] end
  local metas = rcall("MGET", unpack(metaKeys))
  local writes, scored = {}, {}
  for i, id in ipairs(ids) do
    local parts = not kept[i] and not metas[i] and deadEntryParts(entries[i])
    if parts then
      writes[#writes + 1] = KEYS[keyAt[i]]
      writes[#writes + 1] = parts.record
      writes[#writes + 1] = KEYS[keyAt[i] + 1]
      writes[#writes + 1] = finishedMeta("dead", parts.attempts, parts.errorJson, parts.failedAt, parts.history)
      scored[#scored + 1] = parts.failedAt
      scored[#scored + 1] = id
    end
  end
  if #writes > 0 then
    msetPairs(writes)
    rcall("ZADD", atKey, unpack(scored))
  end
end
rcall("LTRIM", listKey, 0, -(n + 1))
return rcall("LLEN", listKey)
