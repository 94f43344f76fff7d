--[[
  dead: reading dead-letter entries and walking a topic's dead letters for
  the bulk operations (replay, purge). Needs `-- @include position` before it.
  Included by scripts that say `-- @include dead`.
]]

-- An entry's parts without decoding its record (cjson would round payload
-- numbers): its error (JSON-decoded from the small head), the history's JSON
-- text ("[]" in entries written before histories were kept) and the record's
-- JSON text. The entry layout is lib/records.lua deadEntry's.
local function deadEntryParts(entry)
  local at = string.find(entry, ',"job":', 1, true)
  if not at then return nil end
  local from = string.find(entry, ',"history":', 1, true)
  local headEnd = (from and from < at) and from or at
  local head = cjson.decode(string.sub(entry, 1, headEnd - 1) .. "}")
  local lastError = head.lastError
  if lastError == cjson.null then lastError = nil end
  return {
    lastError = lastError,
    history = (from and from < at) and string.sub(entry, from + 11, at - 1) or "[]",
    record = string.sub(entry, at + 7, -2),
  }
end

-- Dead letters are read this many at a time, so a walk stops soon after its byte budget.
local DEAD_READ_BATCH = --[[LIMIT:LUA_READ_BATCH]]25

--[[
  One bounded step of a walk over a topic's dead letters, oldest first, in
  the failed-time window [from, to], from the position (afterScore, afterId)
  ("" for the window's start): looks at most `max` letters and stops once it
  has read `budget` bytes of entries. Picks those whose error holds
  `needle` (plain text; "" picks all). Returns the picked letters
  ({ id, parts }), the position reached (score, id; afterScore, afterId when
  it looked at none) and whether more letters may follow in the window.
]]
local function walkDead(atKey, entriesKey, from, to, afterScore, afterId, max, budget, needle)
  local start = startRank(atKey, from, afterScore, afterId)
  local ids, scores, more = takeFrom(atKey, start, max, to)
  local picked, looked, bytes = {}, 0, 0
  while looked < #ids and bytes <= budget do
    local slice = {}
    for j = looked + 1, math.min(looked + DEAD_READ_BATCH, #ids) do slice[#slice + 1] = ids[j] end
    local entries = redis.call("HMGET", entriesKey, unpack(slice))
    for j, id in ipairs(slice) do
      local entry = entries[j]
      if entry then
        bytes = bytes + #entry
        local parts = deadEntryParts(entry)
        if parts and (needle == "" or (parts.lastError and string.find(parts.lastError, needle, 1, true))) then
          picked[#picked + 1] = { id = id, parts = parts }
        end
      end
    end
    looked = looked + #slice
  end
  if looked < #ids then more = true end
  if looked == 0 then return picked, afterScore, afterId, more end
  return picked, scores[looked], ids[looked], more
end

-- Drops letters by id from the set and the hash.
local function dropDead(atKey, entriesKey, ids)
  if #ids == 0 then return end
  redis.call("ZREM", atKey, unpack(ids))
  redis.call("HDEL", entriesKey, unpack(ids))
end
