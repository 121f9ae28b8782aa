-- rate_limit.lua: sliding-window log limiter with a queue of refused waiters. Admits a token when fewer than
-- `limit` admissions fall in the window (now - period, now]; so no window of `period` ever holds more than
-- `limit` admissions. A caller that comes back (a deferred delivery, named by `waiter`) is refused O(1)
-- times: refused, it takes a place in the queue and is told when its turn comes; later callers queue
-- behind it instead of taking the slots owed to it. N waiters cost O(N) calls, not O(N^2 / limit).
--
-- KEYS[1] log        ZSET   admission token -> admission time (ms); expires when idle for a period
-- KEYS[2] queue      ZSET   waiter -> its place (a ticket: lower goes first)
-- KEYS[3] told       ZSET   waiter -> the turn it was told (ms), while queued or late
-- ARGV[1] now_ms     current time (ms since epoch)
-- ARGV[2] limit      admissions allowed per window
-- ARGV[3] period_ms  window length (ms)
-- ARGV[4] token      unique id of this admission (a stream entry id, a request id)
-- ARGV[5] waiter     the caller's id across its retries (job:generation); "" for a caller that does not
--                    come back at retry_at (an API request): it is neither queued nor held back
-- ARGV[6] late_ms    a waiter this late (ms) for its turn leaves the queue, so it no longer holds back
--                    those behind it (it may be gone); if it does come, it goes first
-- ARGV[7] forget_ms  a waiter this late (ms) leaves the queue and is forgotten (cancelled, dead-lettered,
--                    lost); the queue is shared/waiter_queue.lua's
--
-- Returns {1, 0} when admitted; {0, retry_at_ms} when refused. Without a waiter, retry_at_ms is the moment the
-- oldest admission leaves the window. A waiter with k waiters ahead of it gets the k-th slot to come free:
-- now for a slot free now, else when the matching admission leaves the window, plus a period per `limit`
-- places (window_start + ceil(k / limit) * period in the steady state). A waiter told too early (those
-- ahead came late) is refused again and told anew, keeping its place.
-- O(log N + expired) for N admissions and waiters.
local log_key, queue_key, told_key = KEYS[1], KEYS[2], KEYS[3]
local now_ms = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local period_ms = tonumber(ARGV[3])
local token, waiter = ARGV[4], ARGV[5]
local late_ms, forget_ms = tonumber(ARGV[6]), tonumber(ARGV[7])

-- @include waiter_queue
-- @include rate_window

return rate_window_admit(log_key, queue_key, told_key, now_ms, limit, period_ms, token, waiter, late_ms,
  forget_ms)
