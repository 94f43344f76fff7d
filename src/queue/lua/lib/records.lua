--[[
  records: what claim (reaping), settle and cancel write when an attempt
  fails or a job finishes, in one place. The two JSON documents are built by
  string concatenation so the job record (with its payload) is embedded as
  stored, never decoded and re-encoded (cjson would round numbers to 14 digits).
  src/queue/types.ts parses them (doneSchema, deadEntrySchema).
  Included by scripts that say `-- @include records`.
]]

-- A finished job, readable for the retention window. errorJson is JSON text ("null" for none).
local function doneRecord(state, attempts, errorJson, nowText, record)
  return '{"state":"' .. state .. '","attempts":' .. attempts .. ',"lastError":' .. errorJson ..
    ',"finishedAt":' .. nowText .. ',"job":' .. (record or "null") .. '}'
end

-- A dead-letter entry. The id opens it and the record closes it: replay-dead.lua relies on both.
local function deadEntry(id, attempts, errorJson, nowText, record)
  return '{"id":"' .. id .. '","attempts":' .. attempts .. ',"lastError":' .. errorJson ..
    ',"failedAt":' .. nowText .. ',"job":' .. (record or "null") .. '}'
end

-- The writes of a failed attempt that will be retried: back on the schedule
-- with its attempt count and error. dueArgs are score/id pairs, metaArgs id/meta pairs.
local function writeRetries(dueKey, metaKey, dueArgs, metaArgs)
  redis.call("ZADD", dueKey, unpack(dueArgs))
  redis.call("HSET", metaKey, unpack(metaArgs))
end

-- The writes of finished jobs: records dropped, done records (id/record pairs)
-- kept in the retention bucket, which expires as a whole.
local function writeFinished(jobsKey, metaKey, doneKey, doneTtl, ids, doneArgs)
  redis.call("HDEL", jobsKey, unpack(ids))
  redis.call("HDEL", metaKey, unpack(ids))
  redis.call("HSET", doneKey, unpack(doneArgs))
  redis.call("PEXPIRE", doneKey, doneTtl)
end

-- Dead letters pushed newest first onto the capped list.
local function pushDead(deadKey, entries, cap)
  redis.call("LPUSH", deadKey, unpack(entries))
  redis.call("LTRIM", deadKey, 0, cap - 1)
end
