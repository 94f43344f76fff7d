#!lua flags=allow-key-locking
--[[
  extend-lease: a pull consumer moves the deadline of the lease it holds to
  now + leaseMs (SQS's ChangeMessageVisibility), later or sooner. Fenced as a
  settle is (settle.lua): only while the job is still leased at that very
  attempt, so a consumer whose lease expired and was reaped, or whose job
  was settled or claimed again, changes nothing. A lease past its deadline
  that no claim has reaped yet is still that attempt's, and is extended (it
  could be acked too). The meta is not written: the deadline lives only in
  the lease set.

  Only a pull topic's leases: a push topic's job is leased by the tick for
  its handler's timeout, and the chunk that runs it settles it; no one else
  holds it.

  The topic index is not touched, and need not be. It does not score pull
  topics (a push claim of one drops it, claim.lua step 0): their expired
  leases are reaped by pull claims, which read the lease set itself, so a
  deadline moved either way is reaped when it passes and never earlier. A
  switch of the topic to push (configure-topic.lua) lowers its score to the
  earliest lease deadline it finds then, and from then on this script refuses
  the topic's jobs, so no later extension can leave the index behind a lease.
  Were push leases extended here, a later deadline would leave the index at
  the old one, which is only early: it costs the tick one claim that reaps
  nothing and writes the exact score (the new deadline), so no reap is lost
  and the tick does not spin; a sooner one would need ZADD LT on the index.

  Cost: one call, and 4 commands in it on success (ZSCORE, GET, HGET, ZADD);
  a refused one 2 or 3 (EXISTS only for a job with no meta).

  KEYS[1]  lease zset      id -> lease deadline ms
  KEYS[2]  meta            string: the job's meta JSON (lib/records.lua; absent before its first claim)
  KEYS[3]  conf hash       topic settings: its mode
  KEYS[4]  record          string: the job's record, only checked for existence (a job without meta: unknown or never claimed)

  ARGV[1]  job id
  ARGV[2]  attempt, as the claim gave it
  ARGV[3]  now, epoch ms
  ARGV[4]  leaseMs: the new deadline is now + leaseMs

  Returns  { 1, the new deadline ms } extended; { 0 } stale: not leased at that attempt (scheduled, finished, or another attempt);
           { -1 } unknown: no such job (never enqueued, or swept); { -2 } its topic is push: the tick's lease
]]
-- @include records
local rcall = redis.call
local leaseKey, metaKey, confKey, recordKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local id, attempt = ARGV[1], tonumber(ARGV[2])
local deadline = tonumber(ARGV[3]) + tonumber(ARGV[4])

local leased = rcall("ZSCORE", leaseKey, id)
local raw = rcall("GET", metaKey)
local meta = raw and cjson.decode(raw)
if not leased or not meta or isFinished(meta) or meta.a ~= attempt then
  if raw or rcall("EXISTS", recordKey) == 1 then return { 0 } end
  return { -1 }
end
if (rcall("HGET", confKey, "mode") or "push") ~= "pull" then return { -2 } end
rcall("ZADD", leaseKey, "XX", deadline, id)
return { 1, deadline }
