#!lua flags=allow-key-locking
--[[
  peek: the tick's poll. One command finds every topic with work due now
  across all topics, however many topics exist: the head of the topic index
  (lib/index.lua). Renews the tick lock in the same call when asked, so
  renewing costs no request of its own, sets or clears the tick's sleep
  mark, records the tick's status, lists what to sample and samples the given
  topics' backlogs for the per-minute series the same way.

  KEYS[1]        topic index  zset topic -> when the tick should next look at it
  KEYS[2]        tick lock    STRING owner token, expires
  KEYS[3]        sleep mark   STRING present while the tick sleeps past TICK_POLL_MS: "1" (expires) or "c"
  KEYS[4]        tick status  STRING JSON the loop reports about itself (dashboard, /metrics)
  KEYS[5]        parked set   topics that are pull or paused
  KEYS[5+3i-2]   due zset of sampled topic i     (i = 1..m)
  KEYS[5+3i-1]   lease zset of sampled topic i
  KEYS[5+3i]     metrics hash of sampled topic i

  ARGV[1]        owner token to renew the lock for, or "" not to renew
  ARGV[2]        lock time to live, ms (with a token)
  ARGV[3]        sleep mark: "" leave it, "-" clear it, "c" set it to "c" (the loop ends; the next
                 cron looks: src/tick/sleep-mark.ts), or a time to live in ms to set it to "1" for
  ARGV[4]        tick status JSON to record, or "" not to
  ARGV[5]        minute (floor(epoch ms / 60,000)) to sample the given topics for, or "" not to;
                 each sampled topic's metrics hash gets "g<minute mod SERIES_MINUTES>" =
                 [minute, scheduled, ready, in flight]
  ARGV[6]        now, epoch ms
  ARGV[7]        k, most due topics to return
  ARGV[8]        "1" to list what to sample next (the index's first ARGV[9] topics and the parked set), "0" not to
  ARGV[9]        with ARGV[8] "1": how many of the index's topics to list

  Returns        { lock (1 renewed or not asked, 0 lost: not ours any more),
                   more (1: k topics were due and more may be, else 0),
                   the earliest score later than now (-1: none known),
                   due topics: array of topic, score, … (earliest first),
                   topics to sample: array (empty unless asked) }
]]
local rcall = redis.call
local lock = 1
if ARGV[1] ~= "" then
  if rcall("GET", KEYS[2]) == ARGV[1] then
    rcall("PEXPIRE", KEYS[2], ARGV[2])
  else
    lock = 0
  end
end
-- A loop that lost the lock changes nothing shared.
if lock == 1 then
  if ARGV[3] == "-" then
    rcall("DEL", KEYS[3])
  elseif ARGV[3] == "c" then
    rcall("SET", KEYS[3], "c")
  elseif ARGV[3] ~= "" then
    rcall("SET", KEYS[3], "1", "PX", ARGV[3])
  end
  if ARGV[4] ~= "" then rcall("SET", KEYS[4], ARGV[4]) end
end

local now, k = tonumber(ARGV[6]), tonumber(ARGV[7])
-- k + 1 entries: the one after the due ones says when to look next.
local head = rcall("ZRANGE", KEYS[1], 0, k, "WITHSCORES")
local due, nextAt, more = {}, -1, 0
for i = 1, #head, 2 do
  local score = tonumber(head[i + 1])
  if score <= now then
    if #due < 2 * k then
      due[#due + 1] = head[i]
      due[#due + 1] = head[i + 1]
    else
      more = 1
    end
  else
    nextAt = head[i + 1]
    break
  end
end

local minute = lock == 1 and ARGV[5] ~= "" and tonumber(ARGV[5])
if minute then
  for i = 6, #KEYS, 3 do
    local sample = { minute, rcall("ZCARD", KEYS[i]), rcall("ZCOUNT", KEYS[i], "-inf", ARGV[6]), rcall("ZCARD", KEYS[i + 1]) }
    rcall("HSET", KEYS[i + 2], "g" .. (minute % --[[LIMIT:SERIES_MINUTES]]1440), cjson.encode(sample))
  end
end

local toSample = {}
if ARGV[8] == "1" then
  local seen = {}
  for _, t in ipairs(rcall("ZRANGE", KEYS[1], 0, tonumber(ARGV[9]) - 1)) do
    seen[t] = true
    toSample[#toSample + 1] = t
  end
  for _, t in ipairs(rcall("SMEMBERS", KEYS[5])) do
    if not seen[t] then toSample[#toSample + 1] = t end
  end
end
return { lock, more, nextAt, due, toSample }
