--[[
  records: the two JSON documents scripts write about finished jobs, built by
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
