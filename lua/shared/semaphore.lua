-- semaphore.lua: the lease-expiring semaphore with a queue of refused waiters that concurrency_acquire.lua
-- and queue_admit.lua share (see concurrency_acquire.lua for the rule). A fragment, never loaded alone: it
-- reads no KEYS or ARGV (the including script passes them in) and needs shared/waiter_queue.lua included
-- before it.
--
-- holders  ZSET   holder token -> lease expiry (ms)
-- started  ZSET   holder token -> when it took its slot (ms)
-- queue    ZSET   waiter token -> its place (a ticket: lower goes first)
-- told     ZSET   waiter token -> the turn it was told (ms), while queued or late
-- hold     STRING typical hold time (ms), a moving average kept by concurrency_release.lua
--
-- Returns: semaphore_acquire returns {1, 0, 0} when admitted, {1, 0, 1} when the token already held a slot
-- (its lease extended), {0, retry_at_ms, 0} when refused. O(log N + expired) for N holders and waiters.

local function semaphore_acquire(holders_key, started_key, queue_key, told_key, hold_key, now_ms, limit, token,
                                 lease_expires_ms, default_hold_ms, late_ms, forget_ms)
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
end
