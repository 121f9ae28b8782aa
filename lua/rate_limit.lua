-- rate_limit.lua: sliding-window log limiter. Admits a token when fewer than `limit` admissions fall in
-- the window (now - period, now]; so no window of `period` ever holds more than `limit` admissions.
--
-- KEYS[1] log        ZSET   admission token -> admission time (ms); expires when idle for a period
-- ARGV[1] now_ms     current time (ms since epoch)
-- ARGV[2] limit      admissions allowed per window
-- ARGV[3] period_ms  window length (ms)
-- ARGV[4] token      unique id of this admission (a stream entry id, a request id)
--
-- Returns {1, 0} when admitted; {0, retry_at_ms} when refused, retry_at_ms being the moment the oldest
-- admission leaves the window. O(log N + expired); N <= limit.
local log_key = KEYS[1]
local now_ms = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local period_ms = tonumber(ARGV[3])
local token = ARGV[4]

redis.call('ZREMRANGEBYSCORE', log_key, '-inf', now_ms - period_ms)
if redis.call('ZCARD', log_key) < limit then
  redis.call('ZADD', log_key, now_ms, token)
  redis.call('PEXPIRE', log_key, period_ms)
  return {1, 0}
end
local oldest = redis.call('ZRANGE', log_key, 0, 0, 'WITHSCORES')
return {0, tonumber(oldest[2]) + period_ms}
