-- defer.lua: puts a delivery back into the due ZSET without a new generation (a flow-control limiter said
-- "not yet"; no attempt was spent and DynamoDB was not changed), and finishes its stream entry. Atomic, so a
-- crash leaves the member either still pending (re-delivered by the reaper) or due again, never lost.
--
-- KEYS[1] due       ZSET   member -> due time (ms)
-- KEYS[2] ready     STREAM entries {m = member, d = deliveries}
-- KEYS[3] inflight  ZSET   member -> time it entered the ready stream (ms)
-- KEYS[4] wake      LIST   at most one token; the promoter blocks on it
-- ARGV[1] group     consumer group name
-- ARGV[2] entry_id  the stream entry id being finished
-- ARGV[3] member    the entry's member
-- ARGV[4] due_ms    when to try again (ms since epoch)
--
-- Returns 1 when the entry was still pending and is now deferred, 0 when it had already been finished
-- (then nothing changes). O(log N).
local due_key, ready_key, inflight_key, wake_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local group, entry_id, member = ARGV[1], ARGV[2], ARGV[3]
local due_ms = tonumber(ARGV[4])

if redis.call('XACK', ready_key, group, entry_id) == 0 then
  return 0
end
redis.call('XDEL', ready_key, entry_id)
redis.call('ZREM', inflight_key, member)
local earliest = redis.call('ZRANGE', due_key, 0, 0, 'WITHSCORES')
redis.call('ZADD', due_key, due_ms, member)
if (earliest[2] == nil or due_ms < tonumber(earliest[2])) and redis.call('LLEN', wake_key) == 0 then
  redis.call('RPUSH', wake_key, '1')
end
return 1
