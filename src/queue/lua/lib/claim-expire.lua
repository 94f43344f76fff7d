--[[
  claim-expire: claim.lua's expiry (lib/expire.lua), kept in a file of its
  own for its size and included by claim.lua alone, after its locals: it
  reads nd, nl, nx, candidate, now, shaped, the topic's keys (dueKey,
  expKey, confKey and the flow keys), expiring, maxLateness, finishKeys and
  keepExpired as they stand there.
]]

-- Ends the nx expiring candidates still past their expiresAt and pending
-- (never started: no attempt) as expired. One no longer pending (started,
-- cancelled, already ended) only leaves the exp set.
local function expirePast()
  if nx == 0 then return end
  local ids, metaKeys = {}, {}
  for c = nd + nl + 1, nd + nl + nx do
    local id, _, mk = candidate(c)
    ids[#ids + 1] = id
    metaKeys[#metaKeys + 1] = mk
  end
  local exps = rcall("ZMSCORE", expKey, unpack(ids))
  local dues = rcall("ZMSCORE", dueKey, unpack(ids))
  local keyedDues = shaped and rcall("ZMSCORE", fdueKey, unpack(ids)) or {}
  local metas = rcall("MGET", unpack(metaKeys))
  local ending, plain, keyed, stale = {}, {}, {}, {}
  for i, id in ipairs(ids) do
    local at = exps[i] and tonumber(exps[i])
    if at and at <= now then
      local raw = metas[i]
      local fresh = not raw or (cjson.decode(raw).a or 0) == 0
      if fresh and dues[i] then
        plain[#plain + 1] = id
      elseif fresh and keyedDues[i] then
        local _, rk = candidate(nd + nl + i)
        keyed[#keyed + 1] = { id = id, rk = rk, due = tonumber(keyedDues[i]) }
      else
        stale[#stale + 1] = id
      end
      if fresh and (dues[i] or keyedDues[i]) then ending[#ending + 1] = { id = id, mk = metaKeys[i], raw = raw } end
    end
  end
  -- Writes first (metas, done or dead-letter set), then out of the pending sets.
  expireJobs(ending, ARGV[1], finishKeys, keepExpired)
  if #plain > 0 then rcall("ZREM", dueKey, unpack(plain)) end
  if #keyed > 0 then
    local keyedIds, recordKeys = {}, {}
    for j, k in ipairs(keyed) do
      keyedIds[j] = k.id
      recordKeys[j] = k.rk
    end
    local records = rcall("MGET", unpack(recordKeys))
    rcall("ZREM", fdueKey, unpack(keyedIds))
    for j, k in ipairs(keyed) do
      if records[j] then unscheduleKeyed(records[j], k.due, confKey, fschedKey, freadyKey, fkidxKey, k.id) end
    end
  end
  if #stale > 0 then rcall("ZREM", expKey, unpack(stale)) end
end

-- When the tick should next look at the topic for its expiring jobs: the
-- earliest expiresAt, up to the grain (src/limits.ts); nil when none is left.
local EXPIRY_GRAIN_MS = --[[LIMIT:EXPIRY_GRAIN_MS]]250
local function expiryLook()
  local head = earliestScore(expKey)
  if head == nil then return nil end
  return math.ceil(head / EXPIRY_GRAIN_MS) * EXPIRY_GRAIN_MS
end

-- The expiresAt of each of `list`'s jobs (idOf(item): its id; false: none), read only for a topic with expiring jobs.
local function expiriesOf(list, idOf)
  if not expiring or #list == 0 then return {} end
  local ids = {}
  for i, item in ipairs(list) do ids[i] = idOf(item) end
  return rcall("ZMSCORE", expKey, unpack(ids))
end

-- Jobs a claim started leave the exp set (leaseArgs: deadline, id pairs).
local function startedNotExpiring(leaseArgs)
  if not expiring or #leaseArgs == 0 then return end
  local ids = {}
  for i = 2, #leaseArgs, 2 do ids[#ids + 1] = leaseArgs[i] end
  rcall("ZREM", expKey, unpack(ids))
end

-- Whether a job a claim would start at `start` expires instead: it has no
-- attempt yet and is at or past its expiresAt (`at`, or nil), or later than due + maxLateness.
local function lapses(attempts, start, due, at)
  if attempts > 0 then return false end
  at = at and tonumber(at) or nil
  return (at ~= nil and start >= at) or tooLate(start, due, maxLateness)
end

-- The due picks (in due order) a plain claim reads, and their expiries: the first `take`, but a topic whose jobs may
-- expire also reads, past `take`, the picks that may lapse (whether they do is their attempts' say), so an expired
-- job takes no slot from one due behind it; the claim stops once it has taken `take`.
local function picksToRead(picks, take)
  if not (expiring or maxLateness) then
    for j = #picks, take + 1, -1 do picks[j] = nil end
    return picks, {}
  end
  local all, kept, expiries, sure = expiriesOf(picks, function(p) return p.id end), {}, {}, 0
  for i, p in ipairs(picks) do
    if sure >= take then break end
    kept[#kept + 1] = p
    expiries[#kept] = all[i]
    if not lapses(0, math.max(now, p.due), p.due, all[i]) then sure = sure + 1 end
  end
  return kept, expiries
end
