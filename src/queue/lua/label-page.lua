#!lua flags=allow-key-locking
--[[
  label-page: one step of a walk over a label's index (lib/labels.lua): the
  next members after the cursor, in the index's order (ids by lex: enqueue
  order), each with where its job is now: scheduled (the due set or fdue,
  with its due time), in flight (the lease set, with its deadline), dead
  (dead:at, with its failed time), or gone (finished: in none of them). The
  first phase of every listing and bulk call by label: the caller keeps the
  states it wants and hands those ids to the script that reads or changes
  them (read-jobs.lua, cancel-jobs.lua, replay-dead.lua, purge-dead.lua),
  which checks each again. A step looks at ARGV[2] members at most and
  answers at most ARGV[3] of the wanted states, so its work is bounded by the
  label's own members, never by the topic's other jobs. With ARGV[5] "1" the
  stale members it passed leave the index (a dry run passes "0": no write).

  KEYS[1]  the label's index   zset id -> 0 (by lex)
  KEYS[2]  the topic's label set (the label leaves it when its index empties)
  KEYS[3]  due zset            id -> due ms
  KEYS[4]  fdue zset           keyed jobs: id -> due ms
  KEYS[5]  lease zset          id -> lease deadline ms
  KEYS[6]  dead:at zset        id -> failed ms

  ARGV[1]  the cursor: the last id the previous step passed ("" from the start)
  ARGV[2]  most members looked at
  ARGV[3]  most members of the wanted states (within ARGV[7..8]) answered
  ARGV[4]  the wanted states, letters of "s" (scheduled), "i" (in flight), "d" (dead)
  ARGV[5]  "1" drop the stale members passed, "0" leave them
  ARGV[6]  the label (its name in the label set)
  ARGV[7]  lowest score of a wanted member (due time, lease deadline or failed time), or "-inf"
  ARGV[8]  highest score of a wanted member, or "+inf"

  Returns  { 1 when the walk goes on after the last member passed else 0, that member ("" none),
             then per member of a wanted state, in order: id, state letter, score }
]]
-- @include labels
local rcall = redis.call
local indexKey, labelsKey = KEYS[1], KEYS[2]
local scan, most, wanted = tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local low = ARGV[1] == "" and "-" or "(" .. ARGV[1]
local from, to = tonumber(ARGV[7]), tonumber(ARGV[8])

-- One more than looked at shows whether the walk goes on.
local got = rcall("ZRANGE", indexKey, low, "+", "BYLEX", "LIMIT", 0, scan + 1)
local more = #got > scan
if more then got[#got] = nil end
local out = { 0, "" }
if #got == 0 then return out end

local states = { { KEYS[3], "s" }, { KEYS[4], "s" }, { KEYS[5], "i" }, { KEYS[6], "d" } }
local stateOf, scoreOf = {}, {}
for _, s in ipairs(states) do
  local scores = rcall("ZMSCORE", s[1], unpack(got))
  for j = 1, #got do
    if scores[j] and not stateOf[j] then
      stateOf[j], scoreOf[j] = s[2], scores[j]
    end
  end
end

local stale, taken, passed = {}, 0, #got
for j, id in ipairs(got) do
  local state = stateOf[j]
  if not state then
    stale[#stale + 1] = id
  elseif string.find(wanted, state, 1, true) and tonumber(scoreOf[j]) >= from and tonumber(scoreOf[j]) <= to then
    out[#out + 1] = id
    out[#out + 1] = state
    out[#out + 1] = scoreOf[j]
    taken = taken + 1
    -- A full answer ends the step at its last member: the walk goes on after it.
    if taken == most then
      passed = j
      break
    end
  end
end
if ARGV[5] == "1" then dropStale(indexKey, labelsKey, ARGV[6], stale) end
out[1] = (more or passed < #got) and 1 or 0
out[2] = got[passed]
return out
