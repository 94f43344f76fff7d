#!lua flags=allow-key-locking
--[[
  migrate-dead: moves dead letters from the list earlier versions kept (newest
  first, found only by scanning) into the sorted set and hash they are kept
  in now (by failed time and by id), oldest first, at most ARGV[1] per call.
  The dead-letter operations call it until it answers 0, so a deployment's old
  letters stay listed, replayable and purgeable; a letter already kept by id
  (the job died again since) is the newer one and wins.

  KEYS[1]  old dead list   dead-letter entries, newest first
  KEYS[2]  dead-letter set zset id -> failed ms
  KEYS[3]  dead letters    hash id -> dead-letter entry JSON

  ARGV[1]  most entries moved by this call

  Returns  the entries the old list still holds after this call
]]
local rcall = redis.call
local listKey, atKey, entriesKey = KEYS[1], KEYS[2], KEYS[3]
local max = tonumber(ARGV[1])
local oldest = rcall("LRANGE", listKey, -max, -1)
if #oldest == 0 then return 0 end
local ids = {}
for i = #oldest, 1, -1 do ids[#ids + 1] = string.match(oldest[i], '^{"id":"([^"]+)"') or "" end
local kept = rcall("ZMSCORE", atKey, unpack(ids))
local scored, byId = {}, {}
for j, id in ipairs(ids) do
  local entry = oldest[#oldest - j + 1]
  -- The id opens an entry and its failed time follows the error (lib/records.lua deadEntry).
  local failedAt = string.match(entry, ',"failedAt":(%d+)')
  if id ~= "" and failedAt and not kept[j] then
    scored[#scored + 1] = failedAt
    scored[#scored + 1] = id
    byId[#byId + 1] = id
    byId[#byId + 1] = entry
  end
end
if #scored > 0 then
  rcall("ZADD", atKey, unpack(scored))
  rcall("HSET", entriesKey, unpack(byId))
end
rcall("LTRIM", listKey, 0, -(#oldest + 1))
return rcall("LLEN", listKey)
