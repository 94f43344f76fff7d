--[[
  peek: what the tick needs to decide whether a round has work, for the
  price of one command per topic: the topic registry, each known topic's
  earliest due time and, when asked, its earliest lease deadline. Renews the
  tick lock in the same call when asked, so renewing costs no request of its own,
  and sets or clears the tick's sleep mark the same way.

  KEYS[1]        topics set: active-topic registry
  KEYS[2]        tick lock   STRING owner token, expires
  KEYS[3]        sleep mark  STRING present while the tick sleeps past TICK_POLL_MS; expires
  KEYS[3+2i-1]   due zset of known topic i     (i = 1..n)
  KEYS[3+2i]     lease zset of known topic i

  ARGV[1]        "1" to read lease deadlines too, "0" not to
  ARGV[2]        owner token to renew the lock for, or "" not to renew
  ARGV[3]        lock time to live, ms (with a token)
  ARGV[4]        sleep mark: "" leave it, "-" clear it, or a time to live in ms to set it for

  Returns        { lock (1 renewed or not asked, 0 lost: not ours any more),
                   registry members (array),
                   then per known topic: earliest due ms or -1, earliest lease deadline ms or -1 (-1 when not read) }
]]
local rcall = redis.call
local withLeases = ARGV[1] == "1"
local lock = 1
if ARGV[2] ~= "" then
  if rcall("GET", KEYS[2]) == ARGV[2] then
    rcall("PEXPIRE", KEYS[2], ARGV[3])
  else
    lock = 0
  end
end
if lock == 1 and ARGV[4] == "-" then
  rcall("DEL", KEYS[3])
elseif lock == 1 and ARGV[4] ~= "" then
  rcall("SET", KEYS[3], "1", "PX", ARGV[4])
end
local out = { lock, rcall("SMEMBERS", KEYS[1]) }
for i = 4, #KEYS, 2 do
  local due = rcall("ZRANGE", KEYS[i], 0, 0, "WITHSCORES")
  out[#out + 1] = due[2] or -1
  if withLeases then
    local lease = rcall("ZRANGE", KEYS[i + 1], 0, 0, "WITHSCORES")
    out[#out + 1] = lease[2] or -1
  else
    out[#out + 1] = -1
  end
end
return out
