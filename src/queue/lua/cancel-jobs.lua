#!lua flags=allow-key-locking
--[[
  cancel-jobs: cancels many scheduled jobs of one topic, given by id, with
  their keys: the page of a due window (the caller pages the window's ids
  from a position with list-jobs.lua first, the due set and a shaped topic's
  keyed jobs, fdue, as one set, so a walk goes on where the last call
  stopped), the page of one flow key's jobs (its range of the keys' index,
  fkidx, which the caller pages the same way), or ids the caller names. Each
  is checked again: in the due set or fdue (a window's job where it was
  listed; a key's job in the index too), so a job claimed, cancelled or, for
  a walk, moved since it was listed is skipped; jobs in flight are left
  alone. Each cancelled job's meta becomes a finished one, state
  "cancelled", with its attempt history, and its id goes into the topic's
  done set, as cancel.lua does; its record is left untouched. A keyed job
  leaves fdue and, when it has a flow key, its key's index: the key is the
  page's, else its meta's ("k", from its first claim), else its record's
  (read only for a keyed job never claimed). Its members of fsched and
  fready are left to the claim that meets them, which finds the job gone and
  drops them (lib/flow.lua).

  Metas (and those records) are read LUA_READ_BATCH jobs at a time, and a
  call stops once what it has read passes ARGV[3] bytes (at least one batch
  is read), so no call blocks Redis for long whatever the histories.

  KEYS[1]     due zset        id -> due ms
  KEYS[2]     lease zset      id -> lease deadline ms
  KEYS[3]     done zset       finished jobs: id -> finished ms
  KEYS[4]     fdue zset       keyed jobs: id -> due ms (lib/flow.lua)
  KEYS[5]     fkidx zset      the keys' index: "<key>\n<due>\n<id>" -> 0
  KEYS[6]     exp zset        jobs with an expiry -> expiresAt (lib/expire.lua): a cancelled job leaves it
  KEYS[5+2i]  meta of job i   string: job meta JSON (lib/records.lua; absent before its first claim)
  KEYS[6+2i]  record of job i string: job record JSON, read only for a keyed job never claimed (its flow key)

  ARGV[1]  now, epoch ms
  ARGV[2]  "window" (ARGV[5…] id, listed due time pairs), "key" (ARGV[5…] one key's index members,
           "<key>\n<due>\n<id>", in the index's order) or "ids" (ARGV[5…] ids)
  ARGV[3]  most bytes of metas and records read by this call (at least one batch is read)
  ARGV[4]  "window", "key": "1" when the listing had more jobs after the page, else "0"; "ids": ""

  Returns  { cancelled, then "window": 1 when the window may hold more else 0,
             the position reached (score, id of the last job handled; "" "" with no job),
             jobs in flight in the topic ("key" answers the same, its window the key's jobs);
             "ids": how many of the given ids were handled (the caller sends the rest again),
             of them in flight, of them neither scheduled nor in flight }
]]
-- @include records
-- @include flow
local rcall = redis.call
local dueKey, leaseKey, doneKey, fdueKey, fkidxKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local nowText, mode, byteBudget, listedMore = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4] == "1"
local READ_BATCH = --[[LIMIT:LUA_READ_BATCH]]25
local walk = mode ~= "ids"

local ids, scores, members = {}, {}, {}
if mode == "window" then
  for i = 5, #ARGV - 1, 2 do
    ids[#ids + 1] = ARGV[i]
    scores[#scores + 1] = ARGV[i + 1]
  end
elseif mode == "key" then
  for i = 5, #ARGV do
    members[#members + 1] = ARGV[i]
    ids[#ids + 1] = idOfMember(ARGV[i])
    scores[#scores + 1] = string.match(ARGV[i], "\n(%d+)\n")
  end
else
  for i = 5, #ARGV do ids[#ids + 1] = ARGV[i] end
end
local n = #ids

if n == 0 then
  if walk then return { 0, listedMore and 1 or 0, "", "", rcall("ZCARD", leaseKey) } end
  return { 0, 0, 0, 0 }
end

-- Where each job is scheduled: the due set, else fdue (read only for those not in the due set).
local due = mode == "key" and {} or rcall("ZMSCORE", dueKey, unpack(ids))
local keyedDue, unplain = {}, {}
for j = 1, n do
  if not due[j] then unplain[#unplain + 1] = j end
end
if #unplain > 0 then
  local asked = {}
  for k, j in ipairs(unplain) do asked[k] = ids[j] end
  local got = rcall("ZMSCORE", fdueKey, unpack(asked))
  for k, j in ipairs(unplain) do keyedDue[j] = got[k] end
end
local indexed = mode == "key" and rcall("ZMSCORE", fkidxKey, unpack(members)) or {}
local leased = walk and {} or rcall("ZMSCORE", leaseKey, unpack(ids))

-- Whether job j is scheduled as the call names it: a walk's where it was listed, a key's in the index too.
local function scheduled(j)
  local score = due[j] or keyedDue[j]
  if not score then return false end
  if mode == "key" then return indexed[j] ~= nil and indexed[j] ~= false end
  return mode == "ids" or tonumber(score) == tonumber(scores[j])
end

-- The index member of keyed job j (nil without a flow key): the page's, else by its meta's or record's key.
local function memberOf(j, meta, record)
  if mode == "key" then return members[j] end
  local key = meta and meta.k or nil
  if key == nil and record then key = cjson.decode(record).flowKey end
  if key == nil or key == "" then return nil end
  return indexMember(key, keyedDue[j], ids[j])
end

local metaPairs, gone, plain, keyed, unindexed, seen = {}, {}, {}, {}, {}, {}
local inflight, missing, handled, bytes = 0, 0, 0, 0
while handled < n and bytes <= byteBudget do
  local last = math.min(handled + READ_BATCH, n)
  local take, metaKeys, recordKeys, recordOf = {}, {}, {}, {}
  for j = handled + 1, last do
    local id = ids[j]
    if scheduled(j) and not seen[id] then
      seen[id] = true
      take[#take + 1] = j
      metaKeys[#metaKeys + 1] = KEYS[5 + 2 * j]
    elseif not walk then
      if leased[j] then
        inflight = inflight + 1
      elseif not seen[id] then
        missing = missing + 1
      end
    end
  end
  if #take > 0 then
    local metas = rcall("MGET", unpack(metaKeys))
    -- A keyed job never claimed has no meta to name its key: its record does.
    for k, j in ipairs(take) do
      if keyedDue[j] and mode ~= "key" and not (metas[k] and cjson.decode(metas[k]).k) then
        recordKeys[#recordKeys + 1] = KEYS[6 + 2 * j]
        recordOf[j] = #recordKeys
      end
    end
    local records = #recordKeys > 0 and rcall("MGET", unpack(recordKeys)) or {}
    for _, r in ipairs(records) do
      if r then bytes = bytes + #r end
    end
    for k, j in ipairs(take) do
      local raw = metas[k]
      if raw then bytes = bytes + #raw end
      gone[#gone + 1] = ids[j]
      metaPairs[#metaPairs + 1] = metaKeys[k]
      metaPairs[#metaPairs + 1] = finishPending("cancelled", raw, nowText)
      if keyedDue[j] then
        keyed[#keyed + 1] = ids[j]
        unindexed[#unindexed + 1] = memberOf(j, raw and cjson.decode(raw), recordOf[j] and records[recordOf[j]])
      else
        plain[#plain + 1] = ids[j]
      end
    end
  end
  handled = last
end

-- Writes first (metas, done set), then the jobs leave their sets.
if #gone > 0 then
  writeFinished(doneKey, nowText, gone, metaPairs)
  if #plain > 0 then rcall("ZREM", dueKey, unpack(plain)) end
  if #keyed > 0 then rcall("ZREM", fdueKey, unpack(keyed)) end
  if #unindexed > 0 then rcall("ZREM", fkidxKey, unpack(unindexed)) end
  rcall("ZREM", KEYS[6], unpack(gone))
end
if walk then
  local more = (listedMore or handled < n) and 1 or 0
  return { #gone, more, scores[handled], ids[handled], rcall("ZCARD", leaseKey) }
end
return { #gone, handled, inflight, missing }
