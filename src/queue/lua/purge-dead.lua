#!lua flags=allow-key-locking
--[[
  purge-dead: drops dead letters, each with its job's two keys — given ids,
  or one step of a walk over the topic's letters (oldest first, within a
  failed-time window, whose error holds a text), whose ids the caller paged
  first (list-dead.lua). Each id is re-checked against the dead-letter set:
  one replayed or dropped meanwhile is left alone. Metas are read only to
  match an error text (lib/dead.lua); records never. The keys go first, the
  set's ZREM last.

  KEYS[1]     dead-letter set  zset id -> failed ms
  KEYS[2i]    record of job i  string: job record JSON (src/queue/keys.ts jobPairs), for the i-th id in ARGV
  KEYS[2i+1]  meta of job i    string: job meta JSON (lib/records.lua)

  ARGV[1]  most bytes of metas read by this call with an error text (at least one batch of LUA_READ_BATCH is read)
  ARGV[2]  "walk" (ARGV[3…]) or "ids" (ARGV[3…])
  with "walk":
  ARGV[3]  text the error must hold, "" for any
  ARGV[4]  1 when the window holds more letters after the paged ones, else 0
  ARGV[5…] the paged letters, oldest first: id, failed ms, id, failed ms, …
  with "ids": the job ids, each once, from ARGV[3]

  Returns  "walk": { purged, 1 when the window may hold more else 0, position score, position id }
                   (the position: the last paged letter looked at)
           "ids":  { purged }
]]
-- @include dead
local rcall = redis.call
local atKey = KEYS[1]
local budget, mode = tonumber(ARGV[1]), ARGV[2]

-- Drops the letters at these places of the given ids: their keys, then their ids from the set.
local function drop(ids, places)
  if #places == 0 then return 0 end
  local jobKeys, gone = {}, {}
  for _, i in ipairs(places) do
    jobKeys[#jobKeys + 1] = KEYS[2 * i]
    jobKeys[#jobKeys + 1] = KEYS[2 * i + 1]
    gone[#gone + 1] = ids[i]
  end
  for i = 1, #jobKeys, 4000 do
    rcall("DEL", unpack(jobKeys, i, math.min(i + 3999, #jobKeys)))
  end
  local purged = 0
  for i = 1, #gone, 4000 do
    purged = purged + rcall("ZREM", atKey, unpack(gone, i, math.min(i + 3999, #gone)))
  end
  return purged
end

-- The places of the ids still in the set (no meta read: every id the set holds is a letter).
local function stillDead(ids)
  local places = {}
  for i = 1, #ids, 1000 do
    local scores = rcall("ZMSCORE", atKey, unpack(ids, i, math.min(i + 999, #ids)))
    for j = 1, math.min(1000, #ids - i + 1) do
      if scores[j] then places[#places + 1] = i + j - 1 end
    end
  end
  return places
end

if mode == "walk" then
  local ids, scores = idScorePairs(5)
  if #ids == 0 then return { 0, 0, "", "" } end
  local needle, looked, places = ARGV[3], #ids, nil
  if needle == "" then
    places = stillDead(ids)
  else
    local picked
    picked, looked = pickDead(atKey, ids, function(i) return KEYS[2 * i + 1] end, budget, needle)
    places = {}
    for _, p in ipairs(picked) do places[#places + 1] = p.i end
  end
  local more = ARGV[4] == "1" or looked < #ids
  return { drop(ids, places), more and 1 or 0, scores[looked], ids[looked] }
end

local ids = {}
for i = 3, #ARGV do ids[#ids + 1] = ARGV[i] end
return { drop(ids, stillDead(ids)) }
