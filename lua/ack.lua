-- ack.lua: finishes one ready-stream entry after DynamoDB holds the job's outcome.
--
-- KEYS[1] ready     STREAM entries {m = member, d = deliveries}
-- KEYS[2] inflight  ZSET   member -> time it entered the ready stream (ms)
-- ARGV[1] group     consumer group name
-- ARGV[2] entry_id  the stream entry id being finished
-- ARGV[3] member    the entry's member
--
-- Returns 1 when the entry was acknowledged; 0 when it had been already (the reaper re-delivered it as a new
-- entry, which then stays in the in-flight index: only its own ack may remove the member).
-- The entry is deleted as well: acked entries serve nobody, so the stream holds only live work. O(log N).
local ready_key, inflight_key = KEYS[1], KEYS[2]
local group, entry_id, member = ARGV[1], ARGV[2], ARGV[3]

if redis.call('XACK', ready_key, group, entry_id) == 0 then
  return 0
end
redis.call('XDEL', ready_key, entry_id)
redis.call('ZREM', inflight_key, member)
return 1
