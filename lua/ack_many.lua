-- ack_many.lua: finishes several ready-stream entries of one shard, each as ack.lua would, in one call.
--
-- KEYS[1] ready     STREAM entries {m = member, d = deliveries}
-- KEYS[2] inflight  ZSET   member -> time it entered the ready stream (ms)
-- ARGV[1] group     consumer group name
-- ARGV[2..] entry_id, member pairs
--
-- Each entry is acknowledged on its own (XACK per entry): only an entry this call acknowledged is deleted and
-- has its member removed from the in-flight index. One already acknowledged (the reaper re-delivered it as a
-- new entry) leaves its member alone, as ack.lua does: the new entry's own ack removes it.
-- Returns how many entries were acknowledged. O(n log N) for n entries.
local ready_key, inflight_key = KEYS[1], KEYS[2]
local group = ARGV[1]
local acked_ids, acked_members = {}, {}

for i = 2, #ARGV, 2 do
  if redis.call('XACK', ready_key, group, ARGV[i]) == 1 then
    acked_ids[#acked_ids + 1] = ARGV[i]
    acked_members[#acked_members + 1] = ARGV[i + 1]
  end
end
if #acked_ids > 0 then
  redis.call('XDEL', ready_key, unpack(acked_ids))
  redis.call('ZREM', inflight_key, unpack(acked_members))
end
return #acked_ids
