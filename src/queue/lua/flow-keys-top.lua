#!lua flags=allow-key-locking
--[[
  flow-keys-top: a shaped topic's busiest flow keys (lib/flow.lua), with
  their jobs in flight and waiting (due, in fready), for the topic's view.
  Changes nothing. Its work is bounded whatever the number of keys: the
  candidates are the keys with the most jobs in flight among at most
  ARGV[2] of the keys in flight (all of them when there are no more; else a
  random sample, HRANDFIELD), and the first ARGV[3] keys of the calendar and
  of the parked set; each candidate's waiting jobs are counted (ZLEXCOUNT),
  and the ARGV[3] with the most in flight and waiting are returned.

  KEYS[1]  fin hash        flow key -> jobs in flight ("<key>\tu" fields are not keys)
  KEYS[2]  fcal zset       flow key -> its turn
  KEYS[3]  fpark zset      flow key -> 1 at its parallelism, 2 paused
  KEYS[4]  fready zset     due keyed jobs by key, lex

  ARGV[1]  now, epoch ms
  ARGV[2]  most keys in flight looked at
  ARGV[3]  how many keys to return

  Returns  flat, busiest first: key, in flight, waiting, state
           ("turn", "rate": its rate holds it, "parallelism", "paused", "running": none waiting)
]]
local rcall = redis.call
local finKey, fcalKey, fparkKey, freadyKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now, sample, top = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])

local flying = {}
local pairs_
if rcall("HLEN", finKey) <= sample then
  pairs_ = rcall("HGETALL", finKey)
else
  pairs_ = rcall("HRANDFIELD", finKey, sample, "WITHVALUES")
end
local inFlight = {}
for i = 1, #pairs_, 2 do
  if not string.find(pairs_[i], "\t", 1, true) then inFlight[#inFlight + 1] = { key = pairs_[i], n = tonumber(pairs_[i + 1]) } end
end
table.sort(inFlight, function(a, b) return a.n > b.n end)

local candidates, seen = {}, {}
local function add(key)
  if not seen[key] then
    seen[key] = true
    candidates[#candidates + 1] = key
  end
end
for i = 1, math.min(top, #inFlight) do add(inFlight[i].key) end
for _, key in ipairs(rcall("ZRANGE", fcalKey, 0, top - 1)) do add(key) end
for _, key in ipairs(rcall("ZRANGE", fparkKey, 0, top - 1)) do add(key) end
if #candidates == 0 then return {} end

local counts = rcall("HMGET", finKey, unpack(candidates))
local cal = rcall("ZMSCORE", fcalKey, unpack(candidates))
local parked = rcall("ZMSCORE", fparkKey, unpack(candidates))
local rows = {}
for i, key in ipairs(candidates) do
  local waiting = rcall("ZLEXCOUNT", freadyKey, "[" .. key .. "\n", "(" .. key .. "\v")
  local state = "running"
  if parked[i] then
    state = tonumber(parked[i]) == 2 and "paused" or "parallelism"
  elseif cal[i] then
    state = tonumber(cal[i]) > now + 1 and "rate" or "turn"
  end
  rows[#rows + 1] = { key = key, flying = tonumber(counts[i]) or 0, waiting = waiting, state = state }
end
table.sort(rows, function(a, b)
  if a.flying + a.waiting ~= b.flying + b.waiting then return a.flying + a.waiting > b.flying + b.waiting end
  return a.key < b.key
end)
local out = {}
for i = 1, math.min(top, #rows) do
  local r = rows[i]
  out[#out + 1] = r.key
  out[#out + 1] = r.flying
  out[#out + 1] = r.waiting
  out[#out + 1] = r.state
end
return out
