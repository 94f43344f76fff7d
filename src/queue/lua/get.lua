#!lua flags=allow-key-locking
--[[
  get: everything known about one job, read in one consistent snapshot: its
  two keys (src/queue/keys.ts), where it is scheduled or leased, and its
  topic's maxAttempts. A finished job (succeeded, cancelled, dead) is known
  by its meta's state "st" until sweep.lua drops its keys; the caller
  composes its view from record and meta.

  KEYS[1]  due zset        id -> due ms
  KEYS[2]  lease zset      id -> lease deadline ms
  KEYS[3]  record          string: the job record JSON
  KEYS[4]  meta            string: the job meta JSON (lib/records.lua), live or finished
  KEYS[5]  conf hash       topic settings (for the topic's maxAttempts)
  KEYS[6]  fdue zset       keyed jobs scheduled or waiting: id -> due ms (lib/flow.lua)

  ARGV[1]  job id

  Returns  { record or false, meta or false, due ms or false, lease deadline or false,
             the topic's maxAttempts or false }
]]
local rcall = redis.call
local id = ARGV[1]
local got = rcall("MGET", KEYS[3], KEYS[4])
local maxAttempts = rcall("HGET", KEYS[5], "maxAttempts")
if not got[1] and not got[2] then return { false, false, false, false, maxAttempts } end
return { got[1], got[2], rcall("ZSCORE", KEYS[1], id) or rcall("ZSCORE", KEYS[6], id), rcall("ZSCORE", KEYS[2], id), maxAttempts }
