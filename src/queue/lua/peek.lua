--[[
  peek: what the tick needs to decide whether a round has work, for the
  price of one command per topic: the topic registry, each known topic's
  earliest due time and, when asked, its earliest lease deadline. Renews the
  tick lock in the same call when asked, so renewing costs no request of its
  own, and sets or clears the tick's sleep mark, records the tick's status
  and samples each topic's backlog for the per-minute series the same way.

  KEYS[1]        topics set: active-topic registry
  KEYS[2]        tick lock   STRING owner token, expires
  KEYS[3]        sleep mark  STRING present while the tick sleeps past TICK_POLL_MS; expires
  KEYS[4]        tick status STRING JSON the loop reports about itself (dashboard, /metrics)
  KEYS[4+3i-2]   due zset of topic i     (i = 1..n: the known push topics, then topics only sampled)
  KEYS[4+3i-1]   lease zset of topic i
  KEYS[4+3i]     metrics hash of topic i

  ARGV[1]        "1" to read lease deadlines too, "0" not to
  ARGV[2]        owner token to renew the lock for, or "" not to renew
  ARGV[3]        lock time to live, ms (with a token)
  ARGV[4]        sleep mark: "" leave it, "-" clear it, or a time to live in ms to set it for
  ARGV[5]        tick status JSON to record, or "" not to
  ARGV[6]        minute (floor(epoch ms / 60,000)) to sample backlogs for, or "" not to;
                 each topic's metrics hash gets "g<minute mod 1440>" =
                 [minute, scheduled, ready, in flight]
  ARGV[7]        now, epoch ms (with a minute)
  ARGV[8]        how many of the topics are peeked (the rest are only sampled)

  Returns        { lock (1 renewed or not asked, 0 lost: not ours any more),
                   registry members (array),
                   then per peeked topic: earliest due ms or -1, earliest lease deadline ms or -1 (-1 when not read) }
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
-- A loop that lost the lock changes nothing shared.
if lock == 1 then
  if ARGV[4] == "-" then
    rcall("DEL", KEYS[3])
  elseif ARGV[4] ~= "" then
    rcall("SET", KEYS[3], "1", "PX", ARGV[4])
  end
  if ARGV[5] ~= "" then rcall("SET", KEYS[4], ARGV[5]) end
end
local minute = lock == 1 and ARGV[6] ~= "" and tonumber(ARGV[6])
local peeked = 4 + 3 * tonumber(ARGV[8])
local out = { lock, rcall("SMEMBERS", KEYS[1]) }
for i = 5, #KEYS, 3 do
  if i < peeked then
    local due = rcall("ZRANGE", KEYS[i], 0, 0, "WITHSCORES")
    out[#out + 1] = due[2] or -1
    if withLeases then
      local lease = rcall("ZRANGE", KEYS[i + 1], 0, 0, "WITHSCORES")
      out[#out + 1] = lease[2] or -1
    else
      out[#out + 1] = -1
    end
  end
  if minute then
    local sample = { minute, rcall("ZCARD", KEYS[i]), rcall("ZCOUNT", KEYS[i], "-inf", ARGV[7]), rcall("ZCARD", KEYS[i + 1]) }
    rcall("HSET", KEYS[i + 2], "g" .. (minute % 1440), cjson.encode(sample))
  end
end
return out
