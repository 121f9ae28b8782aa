-- rate_window.lua: the sliding-window log with a queue of refused waiters that rate_limit.lua and
-- queue_admit.lua share (see rate_limit.lua for the rule). A fragment, never loaded alone: it reads no KEYS or
-- ARGV (the including script passes them in) and needs shared/waiter_queue.lua included before it.
--
-- log    ZSET   admission token -> admission time (ms); expires when idle for a period
-- queue  ZSET   waiter -> its place (a ticket: lower goes first)
-- told   ZSET   waiter -> the turn it was told (ms), while queued or late
--
-- Returns: rate_window_admit returns {1, 0} when admitted, {0, retry_at_ms} when refused (rate_limit.lua's
-- header says how retry_at_ms is chosen). O(log N + expired) for N admissions and waiters.

local function rate_window_admit(log_key, queue_key, told_key, now_ms, limit, period_ms, token, waiter,
                                 late_ms, forget_ms)
  redis.call('ZREMRANGEBYSCORE', log_key, '-inf', now_ms - period_ms)
  local used = redis.call('ZCARD', log_key)
  local free = math.max(limit - used, 0)

  local place = {ahead = 0}
  if waiter ~= '' then
    place = waiters_place(queue_key, told_key, waiter, now_ms, late_ms, forget_ms)
  end
  if place.ahead < free then
    redis.call('ZADD', log_key, now_ms, token)
    redis.call('PEXPIRE', log_key, period_ms)
    if waiter ~= '' then
      waiters_leave(queue_key, told_key, waiter)
    end
    return {1, 0}
  end
  if waiter == '' then
    local oldest = redis.call('ZRANGE', log_key, 0, 0, 'WITHSCORES')
    return {0, tonumber(oldest[2]) + period_ms}
  end

  -- Slots come free: `free` now, then one as each logged admission leaves the window (the first
  -- `used - limit` of them free nothing when the limit was lowered), and every slot again a period later.
  local round, slot = math.floor(place.ahead / limit), place.ahead % limit
  local base = now_ms
  if slot >= free then
    local i = slot - free + math.max(used - limit, 0)
    local at = redis.call('ZRANGE', log_key, i, i, 'WITHSCORES')
    base = tonumber(at[2]) + period_ms
  end
  local retry_at = base + round * period_ms
  waiters_tell(queue_key, told_key, waiter, place, now_ms, retry_at, forget_ms)
  return {0, retry_at}
end
