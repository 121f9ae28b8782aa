-- concurrency_acquire.lua: lease-expiring semaphore. Admits a holder while fewer than `limit` unexpired
-- holders exist; a holder that crashed without releasing frees its slot when its lease expires.
--
-- KEYS[1] holders          ZSET   holder token -> lease expiry (ms)
-- ARGV[1] now_ms           current time (ms since epoch)
-- ARGV[2] limit            holders allowed at once
-- ARGV[3] token            unique id of this holder
-- ARGV[4] lease_expires_ms when this holder's slot frees itself (ms since epoch)
--
-- Returns {1, 0, 0} when admitted; {1, 0, 1} when the token already held a slot (its lease is extended: the
-- caller must not release a slot it did not take, or a duplicate delivery would free a live holder's slot);
-- {0, earliest_expiry_ms, 0} when refused.
-- Release is a plain ZREM of the token. O(log N + expired); N <= limit.
local holders_key = KEYS[1]
local now_ms = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local token = ARGV[3]
local lease_expires_ms = tonumber(ARGV[4])

redis.call('ZREMRANGEBYSCORE', holders_key, '-inf', now_ms)
local held = redis.call('ZSCORE', holders_key, token) and 1 or 0
if held == 1 or redis.call('ZCARD', holders_key) < limit then
  redis.call('ZADD', holders_key, lease_expires_ms, token)
  -- Relative expiry: the caller's clock and Redis's may differ, so never hand Redis an absolute instant.
  if redis.call('PTTL', holders_key) < lease_expires_ms - now_ms then
    redis.call('PEXPIRE', holders_key, lease_expires_ms - now_ms)
  end
  return {1, 0, held}
end
local earliest = redis.call('ZRANGE', holders_key, 0, 0, 'WITHSCORES')
return {0, tonumber(earliest[2]), 0}
