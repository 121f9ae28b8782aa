-- concurrency_acquire.lua: lease-expiring semaphore with a queue of refused waiters. Admits a holder while
-- fewer than `limit` unexpired holders exist; a holder that crashed without releasing frees its slot when its
-- lease expires. A refused waiter is queued and deferred to when its turn is expected (the holders' expected
-- ends, spread by its place in the queue), and later callers queue behind it: so each delivery is refused
-- O(1) times instead of polling while the key is busy.
--
-- KEYS[1] holders          ZSET   holder token -> lease expiry (ms)
-- KEYS[2] started          ZSET   holder token -> when it took its slot (ms)
-- KEYS[3] queue            ZSET   waiter token -> its place (a ticket: lower goes first)
-- KEYS[4] told             ZSET   waiter token -> the turn it was told (ms), while queued or late
-- KEYS[5] hold             STRING typical hold time (ms), a moving average kept by concurrency_release.lua
-- ARGV[1] now_ms           current time (ms since epoch)
-- ARGV[2] limit            holders allowed at once
-- ARGV[3] token            unique id of this holder (job:generation), also its id as a waiter
-- ARGV[4] lease_expires_ms when this holder's slot frees itself (ms since epoch)
-- ARGV[5] default_hold_ms  the hold time to expect before any holder of the key was released
-- ARGV[6] late_ms          a waiter this late (ms) for its turn leaves the queue, so it no longer holds
--                          back those behind it (it may be gone); if it does come, it goes first
-- ARGV[7] forget_ms        a waiter this late (ms) leaves the queue and is forgotten (cancelled,
--                          dead-lettered, lost); the queue is shared/waiter_queue.lua's
--
-- Returns {1, 0, 0} when admitted; {1, 0, 1} when the token already held a slot (its lease is extended: the
-- caller must not release a slot it did not take, or a duplicate delivery would free a live holder's slot);
-- {0, retry_at_ms, 0} when refused. A waiter with k waiters ahead expects the (k mod limit)-th earliest
-- holder to end (when it started plus the typical hold; an overrunning holder is expected to run as long
-- again as it has overrun, at least a quarter of a hold; never after its lease), plus a typical hold per
-- `limit` places. A waiter told too early is refused again and told anew, keeping its place.
-- Release is concurrency_release.lua. O(log N + expired) for N holders and waiters.
local holders_key, started_key, queue_key, told_key, hold_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local now_ms = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local token = ARGV[3]
local lease_expires_ms = tonumber(ARGV[4])
local default_hold_ms = tonumber(ARGV[5])
local late_ms, forget_ms = tonumber(ARGV[6]), tonumber(ARGV[7])

-- @include waiter_queue

local expired = redis.call('ZRANGEBYSCORE', holders_key, '-inf', now_ms, 'LIMIT', 0, 1000)
for i = 1, #expired, 500 do
  local batch = {unpack(expired, i, math.min(i + 499, #expired))}
  redis.call('ZREM', holders_key, unpack(batch))
  redis.call('ZREM', started_key, unpack(batch))
end

if redis.call('ZSCORE', holders_key, token) then
  redis.call('ZADD', holders_key, lease_expires_ms, token)
  keep_until(holders_key, lease_expires_ms - now_ms)
  keep_until(started_key, lease_expires_ms - now_ms)
  return {1, 0, 1}
end

local place = waiters_place(queue_key, told_key, token, now_ms, late_ms, forget_ms)
local used = redis.call('ZCARD', holders_key)
local free = math.max(limit - used, 0)
if place.ahead < free then
  redis.call('ZADD', holders_key, lease_expires_ms, token)
  redis.call('ZADD', started_key, now_ms, token)
  waiters_leave(queue_key, told_key, token)
  keep_until(holders_key, lease_expires_ms - now_ms)
  keep_until(started_key, lease_expires_ms - now_ms)
  return {1, 0, 0}
end

-- Refused: expect the turn of the (ahead mod limit)-th holder to end, `ahead div limit` holds later.
local hold_ms = tonumber(redis.call('GET', hold_key)) or default_hold_ms
local round, slot = math.floor(place.ahead / limit), place.ahead % limit
local base = now_ms
if slot >= free then
  local i = slot - free + math.max(used - limit, 0)
  local first = redis.call('ZRANGE', started_key, i, i, 'WITHSCORES')
  local holder, started_ms = first[1], tonumber(first[2])
  if started_ms == nil then
    -- A holder with no start time (taken before this script kept them): the i-th earliest lease.
    first = redis.call('ZRANGE', holders_key, i, i, 'WITHSCORES')
    holder, started_ms = first[1], now_ms
  end
  base = started_ms + hold_ms
  if base <= now_ms then
    base = now_ms + math.max(math.floor(hold_ms / 4), now_ms - started_ms - hold_ms, 1)
  end
  local lease = holder and redis.call('ZSCORE', holders_key, holder)
  if lease then
    base = math.min(base, tonumber(lease))
  end
end
local retry_at = math.max(base, now_ms + 1) + round * hold_ms
waiters_tell(queue_key, told_key, token, place, now_ms, retry_at, forget_ms)
return {0, retry_at, 0}
