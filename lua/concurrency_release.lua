-- concurrency_release.lua: frees one holder's slot and folds how long it held it into the key's typical hold
-- time, which concurrency_acquire.lua uses to tell refused waiters when their turn is expected.
--
-- KEYS[1] holders   ZSET   holder token -> lease expiry (ms)
-- KEYS[2] started   ZSET   holder token -> when it took its slot (ms)
-- KEYS[3] hold      STRING typical hold time (ms): a moving average, a quarter weight on each new hold
-- ARGV[1] now_ms    current time (ms since epoch)
-- ARGV[2] token     the holder's token
-- ARGV[3] keep_ms   how long an unused typical hold time is kept (ms)
--
-- Returns 1 when the token held a slot (now freed), 0 when it did not (nothing changes). O(log N).
local holders_key, started_key, hold_key = KEYS[1], KEYS[2], KEYS[3]
local now_ms, token, keep_ms = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])

local started_ms = tonumber(redis.call('ZSCORE', started_key, token))
redis.call('ZREM', started_key, token)
if redis.call('ZREM', holders_key, token) == 0 then
  return 0
end
if started_ms then
  local held_ms = math.max(now_ms - started_ms, 0)
  local typical = tonumber(redis.call('GET', hold_key))
  if typical then
    held_ms = math.floor(typical * 0.75 + held_ms * 0.25 + 0.5)
  end
  redis.call('SET', hold_key, held_ms, 'PX', keep_ms)
end
return 1
