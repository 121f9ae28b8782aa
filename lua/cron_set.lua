-- cron_set.lua: puts a schedule version into the cron ZSET for its next fire time, replacing an older one.
-- Used when a schedule is created, changed, paused, resumed or deleted, and by reconciliation.
--
-- KEYS[1] cron      ZSET   schedule member -> next fire time (ms), or claim expiry (ms) while claimed
-- KEYS[2] claims    HASH   schedule member -> fire time (ms) of the occurrence its claim is for
-- KEYS[3] wake      LIST   at most one token; the promoter blocks on it
-- ARGV[1] old_member      the version to remove with its claim ("" for none)
-- ARGV[2] new_member      the version to add ("" for none: a pause or delete)
-- ARGV[3] next_fire_ms    the new member's score (ms since epoch)
-- ARGV[4] only_if_absent  "1": leave an existing new_member as it is (reconciliation must not undo a claim)
-- KEYS[4] alive     STRING (optional) the promoter heartbeat (promote.lua sets it): a promoter is running
-- KEYS[5] claim     STRING (optional) the wake claim, as index.lua takes it (lua/shared/wake_claim.lua)
-- ARGV[5] now_ms    (optional, with KEYS[4] and KEYS[5]) current time (ms since epoch)
-- ARGV[6] horizon_ms  a new member firing within this long of now_ms needs a promoter soon; 0: never wake
-- ARGV[7] claim_ms  how long the claim lasts
--
-- Returns 1 when new_member was written, 0 otherwise, plus 2 when this call took the wake claim: no
-- promoter runs and the caller must start one (the next tick is the backstop). Pushes a wake token when the new member became the
-- earliest, since the promoter may be sleeping until a later time. O(log N).
local cron_key, claims_key, wake_key = KEYS[1], KEYS[2], KEYS[3]
local old_member, new_member = ARGV[1], ARGV[2]
local next_fire_ms = tonumber(ARGV[3])
local only_if_absent = ARGV[4] == '1'

-- @include wake_claim

if old_member ~= '' and old_member ~= new_member then
  redis.call('ZREM', cron_key, old_member)
  redis.call('HDEL', claims_key, old_member)
end
if new_member == '' then
  return 0
end
if only_if_absent and redis.call('ZSCORE', cron_key, new_member) then
  return 0
end

local earliest = redis.call('ZRANGE', cron_key, 0, 0, 'WITHSCORES')
redis.call('HDEL', claims_key, new_member)
redis.call('ZADD', cron_key, next_fire_ms, new_member)
if earliest[2] == nil or next_fire_ms < tonumber(earliest[2]) then
  if redis.call('LLEN', wake_key) == 0 then
    redis.call('RPUSH', wake_key, '1')
  end
end
return 1 + wake_claim(KEYS[4], KEYS[5], next_fire_ms, tonumber(ARGV[5] or '0'), tonumber(ARGV[6] or '0'),
  tonumber(ARGV[7] or '0'))
