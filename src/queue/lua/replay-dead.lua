--[[
  replay-dead: puts dead-letter entries back on the schedule with fresh
  attempts — those whose ids are given, or all of them — and lowers the
  topic's score in the topic index to their due time.

  KEYS[1]  dead list       dead-letter entries, newest first
  KEYS[2]  due zset        id -> due ms
  KEYS[3]  jobs hash       id -> record JSON
  KEYS[4]  meta hash       id -> {"a":attempts,"d":due ms,"e":last error}
  KEYS[5]  topic index     zset topic -> when the tick should next look at it (lib/index.lua)

  ARGV[1]  due time for the replayed jobs, epoch ms
  ARGV[2]  "all" to replay every entry, "ids" to replay only the ids that follow
  ARGV[3]  topic name
  ARGV[4…] job ids (with "ids")

  Returns  { number of jobs replayed, then (with "ids") each given id that is
             not among the dead letters, once, in the order given }
]]
-- @include index
local rcall = redis.call
local deadKey, dueKey, jobsKey, metaKey, indexKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local due, mode, topic = ARGV[1], ARGV[2], ARGV[3]

-- unpack() is limited to a few thousand values; large variadic calls go in slices.
local function callInSlices(command, key, args)
  for i = 1, #args, 4000 do
    rcall(command, key, unpack(args, i, math.min(i + 3999, #args)))
  end
end

local wanted = {}
for i = 4, #ARGV do wanted[ARGV[i]] = true end

local entries = rcall("LRANGE", deadKey, 0, -1)
local keep, picked, seen = {}, {}, {}
for _, entry in ipairs(entries) do
  -- Entries are built as {"id":…,…,"job":<record>}: the id opens them and the
  -- record closes them, so neither needs a decode and re-encode (which would
  -- round payload numbers to 14 digits).
  local id = string.match(entry, '^{"id":"([^"]+)"')
  local at = string.find(entry, ',"job":', 1, true)
  if id and at and (mode == "all" or wanted[id]) and not seen[id] then
    seen[id] = true
    picked[#picked + 1] = { id, string.sub(entry, at + 7, -2) }
  else
    keep[#keep + 1] = entry
  end
end
-- The list is newest first; replaying oldest first keeps equal due times in the original order.
local records, dues = {}, {}
for i = #picked, 1, -1 do
  records[#records + 1] = picked[i][1]
  records[#records + 1] = picked[i][2]
  dues[#dues + 1] = due
  dues[#dues + 1] = picked[i][1]
end
local out = { #dues / 2 }
if mode == "ids" then
  local told = {}
  for i = 4, #ARGV do
    local id = ARGV[i]
    if not seen[id] and not told[id] then
      told[id] = true
      out[#out + 1] = id
    end
  end
end
if #dues == 0 then return out end
callInSlices("HSET", jobsKey, records)
callInSlices("ZADD", dueKey, dues)
lowerIndex(indexKey, topic, tonumber(due))
local replayedIds = {}
for i = 2, #dues, 2 do replayedIds[#replayedIds + 1] = dues[i] end
callInSlices("HDEL", metaKey, replayedIds)
rcall("DEL", deadKey)
if #keep > 0 then callInSlices("RPUSH", deadKey, keep) end
return out
