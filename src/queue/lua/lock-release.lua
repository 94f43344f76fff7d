#!lua flags=allow-key-locking
--[[
  lock-release: frees the tick lock, only for its owner (compare and delete),
  and records the loop's final status in the same call.

  KEYS[1]  lock key        STRING owner token, expires
  KEYS[2]  tick status     STRING JSON the loop reports about itself

  ARGV[1]  owner token
  ARGV[2]  final status JSON, or "" not to record one

  Returns  1 released, 0 the lock was not ours (nothing changed)
]]
local rcall = redis.call
if rcall("GET", KEYS[1]) == ARGV[1] then
  rcall("DEL", KEYS[1])
  if ARGV[2] ~= "" then rcall("SET", KEYS[2], ARGV[2]) end
  return 1
end
return 0
