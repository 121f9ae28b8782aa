-- queue_admit.lua: decides in one round trip whether a delivery of a named queue may start now: the queue's
-- live settings (written by the API, re-read from DynamoDB when missing), its pause, its concurrency
-- semaphore and its rate window. A paused queue takes nothing from either limiter: the caller parks the
-- delivery (park.lua) and no attempt is spent. All keys share the queue's hash tag {hl:cc:<tenant>:q/<name>}
-- (the concurrency limiter's tag for the key q/<name>, which no job's own key can be: those hold no "/").
--
-- KEYS[1] settings   HASH   limit, period_ms (0: no rate limit), max_concurrency (0: none), paused_since_ms
--                           (0: running); expires after ARGV[8] so a lost write heals from DynamoDB
-- KEYS[2] holders    ZSET   holder token -> lease expiry (ms)
-- KEYS[3] started    ZSET   holder token -> when it took its slot (ms)
-- KEYS[4] cc_queue   ZSET   waiter token -> its place in the semaphore's line
-- KEYS[5] cc_told    ZSET   waiter token -> the turn the semaphore told it (ms)
-- KEYS[6] hold       STRING typical hold time (ms), kept by concurrency_release.lua
-- KEYS[7] log        ZSET   admission token -> admission time (ms); the rate window
-- KEYS[8] rl_queue   ZSET   waiter -> its place in the rate window's line
-- KEYS[9] rl_told    ZSET   waiter -> the turn the rate window told it (ms)
-- ARGV[1] now_ms           current time (ms since epoch)
-- ARGV[2] token            this delivery's stream entry id (its rate admission)
-- ARGV[3] waiter           the delivery's job:generation (its slot token and its place in both lines)
-- ARGV[4] lease_expires_ms when a slot taken now frees itself (ms since epoch)
-- ARGV[5] default_hold_ms  the hold time to expect before any holder was released
-- ARGV[6] late_ms          a waiter this late (ms) for its turn stops holding back those behind it
-- ARGV[7] forget_ms        a waiter this late (ms) is forgotten
--
-- Returns {1, 0, 1} admitted on a slot this call took (the caller releases it, concurrency_release.lua),
-- {1, 0, 0} admitted taking no slot (no concurrency limit, or the waiter already held one: a duplicate
-- delivery, whose first holder releases it); {0, retry_at_ms, 0} refused by a limiter; {2, paused_since_ms, 0} paused (nothing taken);
-- {3, 0, 0} no settings (expired or lost): the caller reads the queue from DynamoDB, writes them and asks
-- again. A rate refusal gives back a slot this call took, so a refused delivery holds nothing.
-- O(log N + expired) for N holders, admissions and waiters.
local settings_key = KEYS[1]
local holders_key, started_key, cc_queue_key, cc_told_key, hold_key = KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local log_key, rl_queue_key, rl_told_key = KEYS[7], KEYS[8], KEYS[9]
local now_ms = tonumber(ARGV[1])
local token, waiter = ARGV[2], ARGV[3]
local lease_expires_ms, default_hold_ms = tonumber(ARGV[4]), tonumber(ARGV[5])
local late_ms, forget_ms = tonumber(ARGV[6]), tonumber(ARGV[7])

-- @include waiter_queue
-- @include semaphore
-- @include rate_window

local found = redis.call('HMGET', settings_key, 'limit', 'period_ms', 'max_concurrency', 'paused_since_ms')
if not found[1] then
  return {3, 0, 0}
end
local limit, period_ms = tonumber(found[1]), tonumber(found[2])
local max_concurrency, paused_since_ms = tonumber(found[3]), tonumber(found[4])
if paused_since_ms > 0 then
  return {2, paused_since_ms, 0}
end

local took_slot = false
if max_concurrency > 0 then
  local verdict = semaphore_acquire(holders_key, started_key, cc_queue_key, cc_told_key, hold_key, now_ms,
    max_concurrency, waiter, lease_expires_ms, default_hold_ms, late_ms, forget_ms)
  if verdict[1] == 0 then
    return verdict
  end
  took_slot = verdict[3] == 0
end
if limit > 0 then
  local verdict = rate_window_admit(log_key, rl_queue_key, rl_told_key, now_ms, limit, period_ms, token,
    waiter, late_ms, forget_ms)
  if verdict[1] == 0 then
    if took_slot then
      redis.call('ZREM', holders_key, waiter)
      redis.call('ZREM', started_key, waiter)
    end
    return {0, verdict[2], 0}
  end
end
return {1, 0, took_slot and 1 or 0}
