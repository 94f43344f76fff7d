#!lua flags=allow-key-locking
--[[
  list-topics: one page of the topic registry in name order (the order of
  Lua's string comparison, byte order in Redis' C locale).

  The registry is a set, which keeps no order; the script sorts its names
  here so that the reply holds only the page: a page of 100 names at
  MAX_TOPICS 10,000 answers ~7 KB where SMEMBERS answered every name
  (sorting 10,000 short strings costs the script a few ms). The cursor is the
  last name of the previous page, never an offset, so topics registered or
  deleted meanwhile never make a page repeat or skip a topic that stays.

  KEYS[1]  topics set      every registered topic name

  ARGV[1]  the page starts after this name ("" to start at the first)
  ARGV[2]  most names on the page

  Returns  { topics registered (SCARD), 1 when more names follow the page else 0, then the page's names }
]]
local names = redis.call("SMEMBERS", KEYS[1])
local after = ARGV[1]
local limit = tonumber(ARGV[2])
local later = {}
for _, name in ipairs(names) do
  if after == "" or name > after then later[#later + 1] = name end
end
table.sort(later)
local reply = { #names, #later > limit and 1 or 0 }
for i = 1, math.min(limit, #later) do reply[#reply + 1] = later[i] end
return reply
