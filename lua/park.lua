-- park.lua: sets a delivery of a paused queue aside without spending an attempt: finishes its stream entry
-- and keeps its member in the shard's parked ZSET of that queue until unpark.lua releases it. DynamoDB is
-- not changed. Atomic, so a crash leaves the member either still pending (re-delivered, and parked again)
-- or parked, never lost. All keys are the shard's ({hl:s<shard>}): slot-safe in a cluster.
--
-- KEYS[1] ready     STREAM entries {m = member, d = deliveries}
-- KEYS[2] inflight  ZSET   member -> time it entered the ready stream (ms)
-- KEYS[3] parked    ZSET   member -> when it was parked (ms); one per shard, tenant and queue
-- KEYS[4] queues    SET    "tenant/queue" of every parked ZSET of the shard that may hold members (the
--                          reaper's list of queues to heal)
-- ARGV[1] group     consumer group name
-- ARGV[2] entry_id  the stream entry id being finished
-- ARGV[3] member    the entry's member
-- ARGV[4] now_ms    current time (ms since epoch)
-- ARGV[5] queue     "tenant/queue", the parked ZSET's name in KEYS[4]
--
-- Returns 1 when the entry was still pending and is now parked, 0 when it had already been finished (then
-- nothing changes). O(log N).
local ready_key, inflight_key, parked_key, queues_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local group, entry_id, member = ARGV[1], ARGV[2], ARGV[3]
local now_ms, queue = tonumber(ARGV[4]), ARGV[5]
if redis.call('XACK', ready_key, group, entry_id) == 0 then
  return 0
end
redis.call('XDEL', ready_key, entry_id)
redis.call('ZREM', inflight_key, member)
redis.call('ZADD', parked_key, 'NX', now_ms, member)
redis.call('SADD', queues_key, queue)
return 1
