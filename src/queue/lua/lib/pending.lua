--[[
  pending: a topic's pending jobs, those scheduled and those waiting (for a
  retry or a due time), which its maxLength caps; jobs in flight are not
  pending. They are the topic's due set and, for a shaped topic, its keyed
  jobs' fdue (lib/flow.lua), oldest first: earliest due, ties in id order
  (the sets' own order; src/queue/jobs.ts reads a dropOldest topic's oldest
  ids in both and merges them). Every script that counts or picks pending
  jobs does it here.
  Included by scripts that say `-- @include pending`.
]]

-- How many jobs the topic holds pending: its due set's and its keyed jobs'.
local function pendingCount(dueKey, fdueKey)
  return redis.call("ZCARD", dueKey) + redis.call("ZCARD", fdueKey)
end

-- The first n of `ids` (read oldest first, see above) still pending, oldest
-- first: by due time now, then in the order read (id order within a due
-- time); fewer when fewer are left. Also returns those of them that are
-- keyed (in fdue), and each one's due time (id -> ms).
local function oldestStillPending(dueKey, fdueKey, ids, n)
  if #ids == 0 then return {}, {}, {} end
  local scores = redis.call("ZMSCORE", dueKey, unpack(ids))
  local keyed = redis.call("ZMSCORE", fdueKey, unpack(ids))
  local live = {}
  for j, id in ipairs(ids) do
    local score = scores[j] or keyed[j]
    if score then live[#live + 1] = { id = id, due = tonumber(score), order = j, keyed = not scores[j] } end
  end
  table.sort(live, function(x, y)
    if x.due ~= y.due then return x.due < y.due end
    return x.order < y.order
  end)
  local out, keyedOut, dueOf = {}, {}, {}
  for j = 1, math.min(n, #live) do
    out[j] = live[j].id
    dueOf[live[j].id] = live[j].due
    if live[j].keyed then keyedOut[#keyedOut + 1] = live[j].id end
  end
  return out, keyedOut, dueOf
end
