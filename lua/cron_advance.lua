-- cron_advance.lua: ends a claim on a schedule by moving it to its next fire time, or removing it.
-- Compare-and-set: applies only while the member's score still equals the claim expiry this caller set;
-- a claim that expired and was taken over, or a schedule changed or deleted meanwhile, is left alone.
--
-- KEYS[1] cron      ZSET   schedule member -> next fire time (ms), or claim expiry (ms) while claimed
-- KEYS[2] claims    HASH   schedule member -> fire time (ms) of the occurrence its claim is for
-- ARGV[1] member          "tenant/schedule_id/version"
-- ARGV[2] claim_until_ms  the claim expiry cron_claim.lua set for this caller (ms since epoch)
-- ARGV[3] next_fire_ms    the next occurrence (ms since epoch); -1 removes the member (ended or stale)
--
-- Returns 1 when the claim was still held and was ended as asked, 0 when it was no longer held.
-- O(log N).
local cron_key, claims_key = KEYS[1], KEYS[2]
local member = ARGV[1]
local claim_until_ms = tonumber(ARGV[2])
local next_fire_ms = tonumber(ARGV[3])

local score = redis.call('ZSCORE', cron_key, member)
if not score or tonumber(score) ~= claim_until_ms then
  return 0
end
redis.call('HDEL', claims_key, member)
if next_fire_ms < 0 then
  redis.call('ZREM', cron_key, member)
else
  redis.call('ZADD', cron_key, next_fire_ms, member)
end
return 1
