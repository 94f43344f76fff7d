--[[
  dead: reading a topic's dead letters for the bulk operations (replay,
  purge). A letter is its job's two keys (src/queue/keys.ts), the meta's
  state "dead" (lib/records.lua finishedMeta), and its id in the topic's
  dead-letter set.
  The bulk operations are two phases: the caller pages ids from the set
  (list-dead.lua), then hands them with their keys to the script, which
  re-checks each against the set and reads only the metas (never a payload).
  Included by scripts that say `-- @include dead`.
]]

-- Metas are read this many at a time, so a call stops soon after its byte budget.
local DEAD_READ_BATCH = --[[LIMIT:LUA_READ_BATCH]]25

--[[
  The dead letters among `ids` (in order; metaKeyOf(i) the meta key of the
  i-th), as they are now: in the set `atKey` and their meta's state "dead" (or "expired": lib/expire.lua).
  Reads the metas DEAD_READ_BATCH at a time and stops once it has read
  `budget` bytes of them (always one batch). Picks the letters whose error
  holds `needle` (plain text; "" picks all). Returns the picked letters
  ({ i, id, meta decoded }), how many ids it looked at, and the looked-at
  ids that are no dead letter of the topic (replayed, dropped or unknown).
]]
local function pickDead(atKey, ids, metaKeyOf, budget, needle)
  local picked, missing = {}, {}
  if #ids == 0 then return picked, 0, missing end
  local kept = {}
  for i = 1, #ids, 1000 do
    local scores = redis.call("ZMSCORE", atKey, unpack(ids, i, math.min(i + 999, #ids)))
    for j = 1, math.min(1000, #ids - i + 1) do kept[i + j - 1] = scores[j] end
  end
  local looked, bytes = 0, 0
  while looked < #ids and bytes <= budget do
    local first, last = looked + 1, math.min(looked + DEAD_READ_BATCH, #ids)
    local metaKeys = {}
    for i = first, last do
      if kept[i] then metaKeys[#metaKeys + 1] = metaKeyOf(i) end
    end
    local metas = #metaKeys > 0 and redis.call("MGET", unpack(metaKeys)) or {}
    local k = 0
    for i = first, last do
      local meta
      if kept[i] then
        k = k + 1
        local text = metas[k]
        if text then
          bytes = bytes + #text
          meta = cjson.decode(text)
          -- An expired job kept as a letter (lib/expire.lua) is one too.
          if meta.st ~= "dead" and meta.st ~= "expired" then meta = nil end
        end
      end
      if meta == nil then
        missing[#missing + 1] = ids[i]
      else
        local lastError = meta.e
        if needle == "" or (type(lastError) == "string" and string.find(lastError, needle, 1, true)) then
          picked[#picked + 1] = { i = i, id = ids[i], meta = meta }
        end
      end
    end
    looked = last
  end
  return picked, looked, missing
end

-- The ids and position-score pairs a walk's caller pages (ARGV from `from` on: id, score, id, score, …).
local function idScorePairs(from)
  local ids, scores = {}, {}
  for i = from, #ARGV - 1, 2 do
    ids[#ids + 1] = ARGV[i]
    scores[#scores + 1] = ARGV[i + 1]
  end
  return ids, scores
end
