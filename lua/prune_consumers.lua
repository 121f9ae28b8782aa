-- prune_consumers.lua: deletes the consumers of the group that hold nothing and have been idle long enough.
-- Every executor process reads as a consumer of its own, so the group gains one per Lambda cold start.
-- One script, so no executor can read between the check and the delete: XGROUP DELCONSUMER drops the
-- consumer's pending entries, and an entry read in that gap would leave the pending list unacknowledged,
-- out of reach of re-delivery.
--
-- KEYS[1] ready     STREAM entries {m = member, d = deliveries}, with the consumer group
-- ARGV[1] group     consumer group name
-- ARGV[2] idle_ms   a consumer idle at least this long (ms, Redis's own count) with nothing pending goes
--
-- Returns the number of consumers deleted (0 when the stream or the group does not exist).
-- O(consumers + deleted).
local ready_key = KEYS[1]
local group = ARGV[1]
local idle_ms = tonumber(ARGV[2])

local consumers = redis.pcall('XINFO', 'CONSUMERS', ready_key, group)
if consumers.err then
  return 0
end
local removed = 0
for _, consumer in ipairs(consumers) do
  local info = {}
  for i = 1, #consumer, 2 do
    info[consumer[i]] = consumer[i + 1]
  end
  if tonumber(info['pending']) == 0 and tonumber(info['idle']) >= idle_ms then
    redis.call('XGROUP', 'DELCONSUMER', ready_key, group, info['name'])
    removed = removed + 1
  end
end
return removed
