#!lua flags=allow-key-locking
--[[
  schedule-write: creates, replaces, pauses or resumes a schedule, as a
  compare-and-set on its revision: the caller read the schedule at revision
  ARGV[2], computed its next occurrence from that, and the write happens only
  if nobody (another upsert, a pause, a fire of the tick) changed it since.
  Keeps the schedules' due set and the index member "~schedules" (score: the
  earliest due occurrence, lib/index.lua) exact, and registers the job
  template's topic under the registry's cap.

  KEYS[1]        schedule definitions  hash id -> definition JSON (what PUT gave, normalized)
  KEYS[2]        schedule states       hash id -> state JSON {rev, next, runs, lastRunAt, lastJobId, paused, ...}
  KEYS[3]        schedule ids          zset id -> 0 (paging in id order)
  KEYS[4]        schedules due         zset id -> next occurrence ms (not paused, not ended)
  KEYS[5]        topic index           zset topic -> when the tick should next look at it
  KEYS[6]        topics set            topic registry

  ARGV[1]        schedule id
  ARGV[2]        revision read (0: the schedule must not exist)
  ARGV[3]        definition JSON to store, or "" to leave it (pause, resume)
  ARGV[4]        state JSON to store (its rev is ARGV[2] + 1)
  ARGV[5]        next occurrence ms to be due at, or "" (paused or ended)
  ARGV[6]        topic to register, or ""
  ARGV[7]        most topics the registry may hold

  Returns        { 1 } written;
                 { 0, current revision } the schedule changed since it was read (0: it is gone);
                 { -1, topics registered, the cap } registering the topic would pass the cap
]]
-- @include index
local rcall = redis.call
local id = ARGV[1]
local current = rcall("HGET", KEYS[2], id)
local rev = current and tonumber(cjson.decode(current).rev) or 0
if rev ~= tonumber(ARGV[2]) then return { 0, rev } end

local topic = ARGV[6]
if topic ~= "" and rcall("SISMEMBER", KEYS[6], topic) == 0 then
  local count = rcall("SCARD", KEYS[6])
  if count + 1 > tonumber(ARGV[7]) then return { -1, count, tonumber(ARGV[7]) } end
  rcall("SADD", KEYS[6], topic)
end

if ARGV[3] ~= "" then rcall("HSET", KEYS[1], id, ARGV[3]) end
rcall("HSET", KEYS[2], id, ARGV[4])
if rev == 0 then rcall("ZADD", KEYS[3], 0, id) end
if ARGV[5] ~= "" then
  rcall("ZADD", KEYS[4], ARGV[5], id)
else
  rcall("ZREM", KEYS[4], id)
end
indexSchedules(KEYS[5], KEYS[4])
return { 1 }
