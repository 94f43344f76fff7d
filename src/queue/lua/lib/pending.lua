--[[
  pending: a topic's pending jobs, those scheduled and those waiting (for a
  retry or a due time), which its maxLength caps; jobs in flight are not
  pending. They are the topic's due set today, oldest first: earliest due,
  ties in id order (the set's own order; src/queue/jobs.ts reads a
  dropOldest topic's oldest ids in it). Every script that counts or picks
  pending jobs does it here, so a second set of pending jobs is added once.
  Included by scripts that say `-- @include pending`.
]]

-- How many jobs the topic holds pending.
local function pendingCount(dueKey)
  return redis.call("ZCARD", dueKey)
end

-- The first n of `ids` (read oldest first, see above) still pending, oldest
-- first: by due time now, then in the order read (id order within a due
-- time); fewer when fewer are left.
local function oldestStillPending(dueKey, ids, n)
  if #ids == 0 then return {} end
  local scores = redis.call("ZMSCORE", dueKey, unpack(ids))
  local live = {}
  for j, id in ipairs(ids) do
    if scores[j] then live[#live + 1] = { id = id, due = tonumber(scores[j]), order = j } end
  end
  table.sort(live, function(x, y)
    if x.due ~= y.due then return x.due < y.due end
    return x.order < y.order
  end)
  local out = {}
  for j = 1, math.min(n, #live) do out[j] = live[j].id end
  return out
end
