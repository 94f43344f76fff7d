#!lua flags=allow-key-locking
--[[
  schedules-due: the schedules whose next occurrence has come, earliest
  first, with their definitions and states, for the tick to fire
  (schedule-fire.lua fences on what this read).

  KEYS[1]        schedules due         zset id -> next occurrence ms
  KEYS[2]        schedule definitions  hash id -> definition JSON
  KEYS[3]        schedule states       hash id -> state JSON

  ARGV[1]        now, epoch ms
  ARGV[2]        most schedules to return

  Returns        { more (1: ARGV[2] were due and more may be, else 0), id, definition, state, … }
]]
local rcall = redis.call
local limit = tonumber(ARGV[2])
local ids = rcall("ZRANGEBYSCORE", KEYS[1], "-inf", ARGV[1], "LIMIT", 0, limit + 1)
local more = 0
if #ids > limit then
  more = 1
  ids[#ids] = nil
end
local out = { more }
if #ids == 0 then return out end
local defs = rcall("HMGET", KEYS[2], unpack(ids))
local states = rcall("HMGET", KEYS[3], unpack(ids))
for i, id in ipairs(ids) do
  out[#out + 1] = id
  out[#out + 1] = defs[i] or ""
  out[#out + 1] = states[i] or ""
end
return out
