--[[
  lock-extend: renews the tick lock, only for its owner.

  KEYS[1]  lock key        STRING owner token, expires

  ARGV[1]  owner token
  ARGV[2]  time to live, ms

  Returns  1 renewed, 0 the lock is not ours (it expired and someone else took it)
]]
local rcall = redis.call
if rcall("GET", KEYS[1]) == ARGV[1] then
  rcall("PEXPIRE", KEYS[1], ARGV[2])
  return 1
end
return 0
