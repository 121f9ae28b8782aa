-- ready_entry.lua: how a member enters its shard's ready stream, shared by index.lua (a job due now),
-- promote.lua (due members) and unpark.lua (a resumed queue's parked members). A fragment, never loaded
-- alone (see waiter_queue.lua); it reads no KEYS or ARGV: the including script passes them in.
--
-- ready     STREAM entries {m = member, d = deliveries}: a member enters with d = 0 (no delivery yet)
-- inflight  ZSET   member -> time it entered the ready stream (ms): the reaper's view of what is queued
--
-- Invariant: a member on the ready stream is in the inflight ZSET from the same call on, so no reader sees
-- it queued but not in flight.
--
-- Returns: enter_ready and move_to_ready return nothing; the caller counts what it moved. O(log N) a member.

local function enter_ready(ready_key, inflight_key, member, now_ms)
  redis.call('XADD', ready_key, '*', 'm', member, 'd', '0')
  redis.call('ZADD', inflight_key, now_ms, member)
end

-- Moves members (read from from_key by the caller) onto the ready stream and out of from_key.
local function move_to_ready(from_key, ready_key, inflight_key, members, now_ms)
  for _, member in ipairs(members) do
    enter_ready(ready_key, inflight_key, member, now_ms)
  end
  if #members > 0 then
    redis.call('ZREM', from_key, unpack(members))
  end
end
