#!lua flags=allow-key-locking
--[[
  lock-acquire: takes the tick lock when it is free.

  KEYS[1]  lock key        STRING "<owner token>|<epoch ms the holder's window ends>", expires
  KEYS[2]  sleep mark      STRING, set while the holder sleeps (idle)

  ARGV[1]  lock value: owner token and window end
  ARGV[2]  time to live, ms

  Returns  { 1 } when taken; { 0, ms until the holder's lock expires, the holder's lock value,
           1 when the holder sleeps else 0 } when held. A repeat whose lock value
           is the holder's (the first run's reply was lost) is taken too.
]]
local rcall = redis.call
if rcall("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then return { 1 } end
local holder = rcall("GET", KEYS[1]) or ""
-- A repeat of a call whose reply was lost finds its own value (unique per loop): taken, so a repeat is harmless.
if holder == ARGV[1] then return { 1 } end
return { 0, rcall("PTTL", KEYS[1]), holder, rcall("EXISTS", KEYS[2]) }
