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
-- @include semaphore

return semaphore_acquire(holders_key, started_key, queue_key, told_key, hold_key, now_ms, limit, token,
  lease_expires_ms, default_hold_ms, late_ms, forget_ms)
