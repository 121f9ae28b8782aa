-- cron_claim.lua: claims due schedules (score <= now) for one promoter until a claim expiry.
-- A claimed member's score becomes the claim expiry, so no other promoter takes it while it is handled,
-- and a crashed promoter's claim simply falls due again. The fire time the claim is for is kept in the
-- claims HASH, so a re-claim after an expiry handles the same occurrence (its instance id is derived from
-- it: creating it twice is impossible, whatever the interleaving).
--
-- KEYS[1] cron      ZSET   schedule member -> next fire time (ms), or claim expiry (ms) while claimed
-- KEYS[2] claims    HASH   schedule member -> fire time (ms) of the occurrence its claim is for
-- ARGV[1] now_ms          current time (ms since epoch); members due later stay
-- ARGV[2] claim_until_ms  when the claims made now expire (ms since epoch); > now_ms
-- ARGV[3] batch           the most members to claim in this call
--
-- Returns {next_ms, member_1, fire_ms_1, member_2, fire_ms_2, ...}: next_ms is the lowest score left after
-- claiming (-1 when the ZSET is empty); fire times are strings of ms. A full batch means more may be due.
-- O(batch * log N).
local cron_key, claims_key = KEYS[1], KEYS[2]
local now_ms = tonumber(ARGV[1])
local claim_until_ms = ARGV[2]
local batch = tonumber(ARGV[3])

local due = redis.call('ZRANGEBYSCORE', cron_key, '-inf', now_ms, 'WITHSCORES', 'LIMIT', 0, batch)
local result = {0}
for i = 1, #due, 2 do
  local member, score = due[i], due[i + 1]
  local fire_ms = redis.call('HGET', claims_key, member)
  if not fire_ms then
    -- A first claim: the score is the occurrence. Otherwise an earlier claim expired: keep its occurrence.
    fire_ms = score
    redis.call('HSET', claims_key, member, fire_ms)
  end
  redis.call('ZADD', cron_key, 'XX', claim_until_ms, member)
  result[#result + 1] = member
  result[#result + 1] = fire_ms
end

local lowest = redis.call('ZRANGE', cron_key, 0, 0, 'WITHSCORES')
if lowest[2] == nil then
  result[1] = -1
else
  result[1] = lowest[2]
end
return result
