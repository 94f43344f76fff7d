--[[
  expire: the one way a job ends "expired" — a job that never started and
  now never will: past its own expiresAt (the record's; the topic's exp set
  holds it, id -> expiresAt), or, when its topic sets maxLateness, a claim
  would start it later than its due time plus that. Only a job with no
  attempt expires: the exp set names a job until its first claim, and the
  claim checks the attempts of a job it meets late, so a job waiting for a
  retry, or in flight, never does.

  An expired job's meta is a finished one, state "expired", with a marker
  {"n":0,"t":expired ms,"o":"expired"} (lib/records.lua: the marker's n = 0
  tells it from an attempt whose lease expired, outcome "expired", n >= 1).
  Its id goes into the done set, or, when the topic keeps expired jobs as
  dead letters (conf "keepExpired"), into its dead-letter set, where it
  reads, replays and is purged as any letter. It leaves the exp set, and
  counts in the topic's "expired" counter (never among failures). The
  caller takes it out of its pending set (the due set, or a keyed job's flow
  sets: lib/flow.lua unscheduleKeyed). Included by scripts that say
  `-- @include expire`, after records.
]]

-- Whether a claim would start a job later than its topic lets it: `start` past due + maxLateness (nil: no bound).
local function tooLate(start, due, maxLateness)
  return maxLateness ~= nil and start > due + maxLateness
end

-- Ends `jobs` ({ id, mk = meta key, raw = live meta JSON or false }) as expired at nowText.
-- `keys`: { done, deadAt, exp, metrics }; keep: into the dead-letter set instead of the done set.
local function expireJobs(jobs, nowText, keys, keep)
  if #jobs == 0 then return end
  local ids, metaPairs = {}, {}
  local marker = { n = 0, t = tonumber(nowText), o = "expired" }
  for _, j in ipairs(jobs) do
    ids[#ids + 1] = j.id
    metaPairs[#metaPairs + 1] = j.mk
    metaPairs[#metaPairs + 1] = finishPending("expired", j.raw, nowText, { n = marker.n, t = marker.t, o = marker.o })
  end
  writeFinished(keep and keys.deadAt or keys.done, nowText, ids, metaPairs)
  for i = 1, #ids, 1000 do
    redis.call("ZREM", keys.exp, unpack(ids, i, math.min(i + 999, #ids)))
  end
  redis.call("HINCRBY", keys.metrics, "expired", #ids)
end
