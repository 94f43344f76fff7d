--[[
  purge-dead: drops a topic's whole dead-letter list.

  KEYS[1]  dead list       dead-letter entries, newest first

  Returns  the number of entries dropped
]]
local rcall = redis.call
local n = rcall("LLEN", KEYS[1])
if n > 0 then rcall("DEL", KEYS[1]) end
return n
