--[[
  lock-release: frees the tick lock, only for its owner (compare and delete).

  KEYS[1]  lock key        STRING owner token, expires

  ARGV[1]  owner token

  Returns  1 released, 0 the lock was not ours
]]
local rcall = redis.call
if rcall("GET", KEYS[1]) == ARGV[1] then
  rcall("DEL", KEYS[1])
  return 1
end
return 0
