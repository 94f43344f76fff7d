#!lua flags=allow-key-locking
--[[
  cancel-jobs: cancels many scheduled jobs of one topic, a bounded amount per
  call: the jobs of a due window (walked in due order from a position, like a
  listing, so a call goes on where the last one stopped), or given ids. Jobs
  in flight are left alone. Each cancelled job keeps a "cancelled" record
  with its attempt history for the retention window, as cancel.lua does.

  A call takes at most ARGV[8] jobs and stops early once the records it has
  read pass ARGV[9] bytes (records are read LUA_READ_BATCH at a time), so no call blocks
  Redis for long whatever the payloads.

  KEYS[1]  due zset        id -> due ms
  KEYS[2]  lease zset      id -> lease deadline ms
  KEYS[3]  jobs hash       id -> record JSON
  KEYS[4]  meta hash       id -> {"a":attempts,"d":due ms,"e":last error,"s":claimed ms,"h":history}
  KEYS[5]  done hash       finished-job records of the current retention bucket

  ARGV[1]  now, epoch ms
  ARGV[2]  done hash TTL, ms
  ARGV[3]  "window" (the due window ARGV[4]..ARGV[5] after the position ARGV[6], ARGV[7]) or "ids" (ARGV[10…])
  ARGV[4]  lowest due time cancelled, or "-inf"
  ARGV[5]  highest due time cancelled, or "+inf"
  ARGV[6]  position score: where the previous call stopped, or "" for the window's start
  ARGV[7]  position id ("" without a position)
  ARGV[8]  most jobs cancelled by this call
  ARGV[9]  most bytes of records read by this call (at least one batch is read)
  ARGV[10…] job ids (with "ids")

  Returns  { cancelled, then "window": 1 when the window may hold more else 0,
             the position reached (score, id; "" "" when none was passed), jobs in flight in the topic;
             "ids": how many of the given ids were handled (the caller sends the rest again),
             of them in flight, of them neither scheduled nor in flight }
]]
-- @include records
-- @include position
local rcall = redis.call
local dueKey, leaseKey, jobsKey, metaKey, doneKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local nowText, doneTtl, mode = ARGV[1], ARGV[2], ARGV[3]
local from, to, afterScore, afterId = ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local max, byteBudget = tonumber(ARGV[8]), tonumber(ARGV[9])
local READ_BATCH = --[[LIMIT:LUA_READ_BATCH]]25

-- Cancels `ids` (all scheduled) in order until the byte budget is spent; returns how many.
local function cancelScheduled(ids)
  local doneArgs, gone = {}, {}
  local bytes = 0
  local i = 1
  while i <= #ids and bytes <= byteBudget do
    local slice = {}
    for j = i, math.min(i + READ_BATCH - 1, #ids) do slice[#slice + 1] = ids[j] end
    local records = rcall("HMGET", jobsKey, unpack(slice))
    local metas = rcall("HMGET", metaKey, unpack(slice))
    for j, id in ipairs(slice) do
      local attempts, lastError, history = 0, "null", nil
      if metas[j] then
        local m = cjson.decode(metas[j])
        attempts, history = m.a, m.h
        if m.e then lastError = cjson.encode(m.e) end
      end
      bytes = bytes + (records[j] and #records[j] or 0)
      gone[#gone + 1] = id
      doneArgs[#doneArgs + 1] = id
      doneArgs[#doneArgs + 1] = doneRecord("cancelled", attempts, lastError, nowText, historyJson(history), records[j] or nil)
    end
    i = i + #slice
  end
  if #gone == 0 then return 0 end
  rcall("ZREM", dueKey, unpack(gone))
  writeFinished(jobsKey, metaKey, doneKey, doneTtl, gone, doneArgs)
  return #gone
end

if mode == "ids" then
  local ids = {}
  for i = 10, math.min(#ARGV, 9 + max) do ids[#ids + 1] = ARGV[i] end
  if #ids == 0 then return { 0, 0, 0, 0 } end
  local due = rcall("ZMSCORE", dueKey, unpack(ids))
  local leased = rcall("ZMSCORE", leaseKey, unpack(ids))
  local scheduled, seen = {}, {}
  local inflight, missing = 0, 0
  for i, id in ipairs(ids) do
    if due[i] and not seen[id] then
      scheduled[#scheduled + 1] = id
      seen[id] = true
    elseif leased[i] then
      inflight = inflight + 1
    elseif not seen[id] then
      missing = missing + 1
    end
  end
  local cancelled = cancelScheduled(scheduled)
  if cancelled == #scheduled then return { cancelled, #ids, inflight, missing } end
  -- The budget ran out: report the ids up to the last one cancelled; the caller sends the rest again.
  local last = scheduled[cancelled]
  local handled, inflightBefore, missingBefore = 0, 0, 0
  for i, id in ipairs(ids) do
    handled = i
    if id == last then break end
    if not due[i] then
      if leased[i] then inflightBefore = inflightBefore + 1 else missingBefore = missingBefore + 1 end
    end
  end
  return { cancelled, handled, inflightBefore, missingBefore }
end

local start = startRank(dueKey, from, afterScore, afterId)
local ids, scores, more = takeFrom(dueKey, start, max, to)
local cancelled = cancelScheduled(ids)
more = (more or cancelled < #ids) and 1 or 0
local inflight = rcall("ZCARD", leaseKey)
if cancelled == 0 then return { 0, more, afterScore, afterId, inflight } end
return { cancelled, more, scores[cancelled], ids[cancelled], inflight }
