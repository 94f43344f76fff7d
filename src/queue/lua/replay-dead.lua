--[[
  replay-dead: puts dead-letter entries back on the schedule with fresh
  attempts — those whose ids are given, or all of them — and lowers the
  topic's score in the topic index to their due time. A replayed job keeps
  its attempt history (in its meta, with 0 attempts), so the attempts before
  the replay stay visible; its attempt numbers start again at 1.

  KEYS[1]  dead list       dead-letter entries, newest first
  KEYS[2]  due zset        id -> due ms
  KEYS[3]  jobs hash       id -> record JSON
  KEYS[4]  meta hash       id -> {"a":attempts,"d":due ms,"e":last error,"s":claimed ms,"h":history}
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
  -- Entries are built as {"id":…,…,"history":[…],"job":<record>}
  -- (lib/records.lua): the id opens them, the history comes just before the
  -- record and the record closes them, so none needs a decode and re-encode
  -- (which would round payload numbers to 14 digits). Entries written before
  -- histories were kept have none.
  local id = string.match(entry, '^{"id":"([^"]+)"')
  local at = string.find(entry, ',"job":', 1, true)
  if id and at and (mode == "all" or wanted[id]) and not seen[id] then
    seen[id] = true
    local from = string.find(entry, ',"history":', 1, true)
    local history = from and from < at and string.sub(entry, from + 11, at - 1) or nil
    picked[#picked + 1] = { id, string.sub(entry, at + 7, -2), history }
  else
    keep[#keep + 1] = entry
  end
end
-- The list is newest first; replaying oldest first keeps equal due times in the original order.
local records, dues, metas, noHistory = {}, {}, {}, {}
for i = #picked, 1, -1 do
  local id, record, history = picked[i][1], picked[i][2], picked[i][3]
  records[#records + 1] = id
  records[#records + 1] = record
  dues[#dues + 1] = due
  dues[#dues + 1] = id
  if history and history ~= "[]" then
    metas[#metas + 1] = id
    metas[#metas + 1] = '{"a":0,"h":' .. history .. '}'
  else
    noHistory[#noHistory + 1] = id
  end
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
if #metas > 0 then callInSlices("HSET", metaKey, metas) end
if #noHistory > 0 then callInSlices("HDEL", metaKey, noHistory) end
rcall("DEL", deadKey)
if #keep > 0 then callInSlices("RPUSH", deadKey, keep) end
return out
