-- index.lua: puts one job member where it belongs for its due time.
-- A member whose due time has come goes straight onto the ready stream (and the in-flight index);
-- a later one goes into the due ZSET, and the promoter is woken when it became the earliest.
--
-- KEYS[1] due       ZSET   member -> due time (ms)
-- KEYS[2] ready     STREAM entries {m = member, d = deliveries}
-- KEYS[3] inflight  ZSET   member -> time it entered the ready stream (ms)
-- KEYS[4] wake      LIST   at most one token; the promoter blocks on it
-- ARGV[1] member    "tenant/job_id/generation[/flow]"
-- ARGV[2] due_ms    when the job is due (ms since epoch)
-- ARGV[3] now_ms    current time (ms since epoch)
-- ARGV[4] new       "1" when the member was never indexed before (its job or generation was created by
--                   the caller a moment ago), so it cannot be in the due ZSET; anything else (or absent):
--                   it may be there (a re-index), and a member due now is taken out of it
-- KEYS[5] alive     STRING (optional) the promoter heartbeat (promote.lua sets it): a promoter is running
-- KEYS[6] claim     STRING (optional) the wake claim: one caller in a burst wakes a promoter
-- ARGV[5] horizon_ms  (optional, with KEYS[5] and KEYS[6]) a member due within this long of now_ms (or due
--                   already) needs a promoter soon; 0 or absent: never wake
-- ARGV[6] claim_ms  how long the claim lasts (SET NX PX): no other caller wakes meanwhile, which covers
--                   the woken promoter's start until its first visit sets the heartbeat
--
-- Returns 1 when the member was put on the ready stream, 0 when it was put into the due ZSET, plus 2 when
-- this call took the wake claim: no promoter was running and the caller must start one (the schedule's
-- next tick is the backstop if it fails to).
-- O(log N); one member per call.
local due_key, ready_key, inflight_key, wake_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local member = ARGV[1]
local due_ms = tonumber(ARGV[2])
local now_ms = tonumber(ARGV[3])
local new_member = ARGV[4] == '1'
local horizon_ms = tonumber(ARGV[5] or '0')

-- @include wake_claim
-- @include ready_entry

local function wake()
  return wake_claim(KEYS[5], KEYS[6], due_ms, now_ms, horizon_ms, tonumber(ARGV[6] or '0'))
end

if due_ms <= now_ms then
  -- A re-indexed member may wait in the due ZSET (indexed for a later time before): left there, the
  -- promoter would put it on the stream a second time. A new one cannot be there: no ZREM (one command
  -- per submitted job). Were a caller wrong about that, the job would be delivered twice, and the second
  -- claim refused by DynamoDB once the first attempt finished (at-least-once, never lost).
  if not new_member then
    redis.call('ZREM', due_key, member)
  end
  enter_ready(ready_key, inflight_key, member, now_ms)
  return 1 + wake()
end

local earliest = redis.call('ZRANGE', due_key, 0, 0, 'WITHSCORES')
redis.call('ZADD', due_key, due_ms, member)
if earliest[2] == nil or due_ms < tonumber(earliest[2]) then
  -- The promoter may be sleeping until a later time: wake it. One token is enough.
  if redis.call('LLEN', wake_key) == 0 then
    redis.call('RPUSH', wake_key, '1')
  end
end
return wake()
