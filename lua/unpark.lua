-- unpark.lua: releases up to `batch` parked members of one queue in one shard (oldest parked first) straight
-- onto the ready stream, as promote.lua does with due members: the queue was resumed, or the reaper found it
-- running. Each member moves exactly once however many callers run at once. When the parked ZSET is left
-- empty the queue leaves the shard's list. All keys are the shard's ({hl:s<shard>}).
--
-- KEYS[1] parked    ZSET   member -> when it was parked (ms)
-- KEYS[2] ready     STREAM entries {m = member, d = deliveries}
-- KEYS[3] inflight  ZSET   member -> time it entered the ready stream (ms)
-- KEYS[4] queues    SET    "tenant/queue" of the shard's parked ZSETs (park.lua)
-- ARGV[1] now_ms    current time (ms since epoch)
-- ARGV[2] batch     the most members to move in this call
-- ARGV[3] queue     "tenant/queue", KEYS[1]'s name in KEYS[4]
-- KEYS[5] alive     STRING (optional) the promoter heartbeat (promote.lua sets it): a promoter is running
-- KEYS[6] claim     STRING (optional) the wake claim: one caller in a burst wakes a promoter
-- ARGV[4] horizon_ms  (optional, with KEYS[5] and KEYS[6]) idle mode: a promoter is needed for members due
--                   now (its fan-out starts executors for them); 0 or absent: never wake
-- ARGV[5] claim_ms  how long the claim lasts (SET NX PX)
--
-- Returns {moved, left, wake}: how many members went onto the ready stream, how many stay parked (left > 0:
-- the caller loops), and 2 when this call moved some and took the wake claim (no promoter was running: the
-- caller must start one, as after index.lua), else 0. O(batch * log N).
local parked_key, ready_key, inflight_key, queues_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now_ms, batch, queue = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local horizon_ms = tonumber(ARGV[4] or '0')

-- @include wake_claim
-- @include ready_entry

local members = redis.call('ZRANGE', parked_key, 0, batch - 1)
move_to_ready(parked_key, ready_key, inflight_key, members, now_ms)
local left = redis.call('ZCARD', parked_key)
if left == 0 then
  redis.call('SREM', queues_key, queue)
end
local wake = 0
if #members > 0 then
  wake = wake_claim(KEYS[5], KEYS[6], now_ms, now_ms, horizon_ms, tonumber(ARGV[5] or '0'))
end
return {#members, left, wake}
