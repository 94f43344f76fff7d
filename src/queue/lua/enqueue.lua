--[[
  enqueue: stores jobs and schedules them, one or a batch in one atomic call.
  A job with an idempotency key that was seen within the window is not stored
  again; its existing id is returned instead.

  KEYS[1]        jobs hash: job id -> job record JSON
  KEYS[2]        topics set: active-topic registry
  KEYS[1+2i]     due zset of job i's topic              (i = 1..n)
  KEYS[2+2i]     idempotency key of job i, or the due key again when the job has none

  ARGV[1]        n, the number of jobs
  ARGV[2]        idempotency window, ms
  then for job i, five values from ARGV[3 + 5(i-1)]:
                 id, due time (epoch ms), record JSON, topic,
                 flags: "i" has an idempotency key, "r" register the topic

  Returns        a flat array, per job: id, deduplicated (1 repeat, 0 new), due time:
                 the one given for a new job; for a repeat, the existing job's while
                 it is scheduled, else -1 (in flight or finished)
]]
local rcall = redis.call
local jobsKey, topicsKey = KEYS[1], KEYS[2]
local n, window = tonumber(ARGV[1]), ARGV[2]

local out = {}
local records = {}
local dueByKey, dueKeys = {}, {}
local register = {}

for i = 1, n do
  local a = 3 + 5 * (i - 1)
  local id, due, record, topic, flags = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4]
  local dueKey, idemKey = KEYS[1 + 2 * i], KEYS[2 + 2 * i]
  local existing = false
  if string.find(flags, "i", 1, true) then
    -- SET NX is the check and the claim in one command; only a repeat pays a GET.
    if not rcall("SET", idemKey, id, "NX", "PX", window) then
      existing = rcall("GET", idemKey)
    end
  end
  if existing then
    out[#out + 1] = existing
    out[#out + 1] = 1
    -- The repeat's own due time would be a guess: the stored job's is the answer.
    out[#out + 1] = rcall("ZSCORE", dueKey, existing) or -1
  else
    records[#records + 1] = id
    records[#records + 1] = record
    local scores = dueByKey[dueKey]
    if not scores then
      scores = {}
      dueByKey[dueKey] = scores
      dueKeys[#dueKeys + 1] = dueKey
    end
    scores[#scores + 1] = due
    scores[#scores + 1] = id
    if string.find(flags, "r", 1, true) then register[topic] = true end
    out[#out + 1] = id
    out[#out + 1] = 0
    out[#out + 1] = due
  end
end

if #records > 0 then
  rcall("HSET", jobsKey, unpack(records))
  for _, dueKey in ipairs(dueKeys) do
    rcall("ZADD", dueKey, unpack(dueByKey[dueKey]))
  end
  local topics = {}
  for topic in pairs(register) do topics[#topics + 1] = topic end
  if #topics > 0 then rcall("SADD", topicsKey, unpack(topics)) end
end
return out
