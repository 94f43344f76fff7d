#!lua flags=allow-key-locking
--[[
  schedules-due: the schedules whose next occurrence has come, earliest
  first, with their definitions and states, for the tick to fire
  (schedule-fire.lua fences on what this read).

  KEYS[1]        schedules due         zset id -> next occurrence ms
  KEYS[2]        schedule definitions  hash id -> definition JSON
  KEYS[3]        schedule states       hash id -> state JSON

  ARGV[1]        now, epoch ms
  ARGV[2]        most schedules to return; fewer once their definitions pass
                 CLAIM_REPLY_BUDGET_BYTES (a definition carries its job's payload;
                 the reply stays inside Upstash's 10 MB cap), always one

  Returns        { more (1: more may be due than returned, else 0), id, definition, state, … }
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
local REPLY_BUDGET = --[[LIMIT:CLAIM_REPLY_BUDGET_BYTES]]4194304
local defs = rcall("HMGET", KEYS[2], unpack(ids))
local states = rcall("HMGET", KEYS[3], unpack(ids))
local bytes = 0
for i, id in ipairs(ids) do
  local def = defs[i] or ""
  bytes = bytes + #def
  if i > 1 and bytes > REPLY_BUDGET then
    out[1] = 1
    break
  end
  out[#out + 1] = id
  out[#out + 1] = def
  out[#out + 1] = states[i] or ""
end
return out
