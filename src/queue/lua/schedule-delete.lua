#!lua flags=allow-key-locking
--[[
  schedule-delete: removes a schedule. Jobs it already stored stay: they are
  ordinary jobs. Keeps the index member "~schedules" exact (lib/index.lua).

  KEYS[1]        schedule definitions  hash id -> definition JSON
  KEYS[2]        schedule states       hash id -> state JSON
  KEYS[3]        schedule ids          zset id -> 0
  KEYS[4]        schedules due         zset id -> next occurrence ms
  KEYS[5]        topic index           zset topic -> when the tick should next look at it

  ARGV[1]        schedule id

  Returns        1 deleted, 0 there was none
]]
-- @include index
local rcall = redis.call
local id = ARGV[1]
if rcall("HDEL", KEYS[2], id) == 0 then return 0 end
rcall("HDEL", KEYS[1], id)
rcall("ZREM", KEYS[3], id)
if rcall("ZREM", KEYS[4], id) == 1 then indexSchedules(KEYS[5], KEYS[4]) end
return 1
