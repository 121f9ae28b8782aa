-- waiter_queue.lua: the queue of refused waiters that rate_limit.lua and concurrency_acquire.lua keep, so
-- each delivery is refused O(1) times: a refused waiter takes a place in the queue and is told when its turn
-- comes, and later callers queue behind it instead of taking the place owed to it. A fragment, never loaded
-- alone: the script loader (hookline/adapters/redis/scripts.py) puts it in place of a script's include line
-- naming it. It reads no KEYS or ARGV: the including script passes them in.
--
-- queue  ZSET   waiter -> its place (a ticket: lower goes first)
-- told   ZSET   waiter -> the turn it was told (ms), while queued or late
--
-- Invariant: every queued waiter has a told turn. A waiter leaves both keys together, when admitted or when
-- forget_ms late (cancelled, dead-lettered, replayed under a new generation: it never comes), and only the
-- queue when late_ms late (it stops holding back those behind it; if it does come, it goes first). A queue
-- head with no told turn (left by a script that forgot only the turn) is dropped: it would never be swept,
-- and every waiter behind it would be refused at each return for ever.
--
-- Returns: waiters_place returns {ticket, told, ahead} (see there); the others return nothing.
-- O(log N + swept) for N waiters; a call sweeps at most WAITERS_SWEEP_BATCH of each kind.
local WAITERS_SWEEP_BATCH = 100

-- Extends key's expiry to ttl_ms unless it lives longer already. Relative: the caller's clock and Redis's
-- may differ, so never hand Redis an absolute instant.
local function keep_until(key, ttl_ms)
  if redis.call('PTTL', key) < ttl_ms then
    redis.call('PEXPIRE', key, ttl_ms)
  end
end

-- Sweeps the queue (forgotten, late, headless) and returns where waiter stands: {ticket = its place or nil
-- when not queued, told = the turn it was told or nil, ahead = the waiters ahead of it}. A newcomer has the
-- whole queue ahead; a late waiter that came back, none (it goes first).
local function waiters_place(queue_key, told_key, waiter, now_ms, late_ms, forget_ms)
  local forgotten = redis.call('ZRANGEBYSCORE', told_key, '-inf', '(' .. (now_ms - forget_ms),
    'LIMIT', 0, WAITERS_SWEEP_BATCH)
  if #forgotten > 0 then
    redis.call('ZREM', told_key, unpack(forgotten))
    redis.call('ZREM', queue_key, unpack(forgotten))
  end
  local late = redis.call('ZRANGEBYSCORE', told_key, '-inf', '(' .. (now_ms - late_ms),
    'LIMIT', 0, WAITERS_SWEEP_BATCH)
  if #late > 0 then
    redis.call('ZREM', queue_key, unpack(late))
  end
  for _ = 1, WAITERS_SWEEP_BATCH do
    local head = redis.call('ZRANGE', queue_key, 0, 0)[1]
    if not head or head == waiter or redis.call('ZSCORE', told_key, head) then
      break  -- (a headless caller keeps its place: it is told anew below, if refused)
    end
    redis.call('ZREM', queue_key, head)
  end
  local place = {
    ticket = redis.call('ZSCORE', queue_key, waiter),
    told = redis.call('ZSCORE', told_key, waiter),
    ahead = 0,
  }
  if place.ticket then
    place.ahead = redis.call('ZCOUNT', queue_key, '-inf', '(' .. place.ticket)
  elseif not place.told then
    place.ahead = redis.call('ZCARD', queue_key)
  end
  return place
end

-- Takes an admitted waiter out of the queue and forgets its turn.
local function waiters_leave(queue_key, told_key, waiter)
  redis.call('ZREM', queue_key, waiter)
  redis.call('ZREM', told_key, waiter)
end

-- Tells a refused waiter its turn, retry_at_ms, queueing it first if it has no place (a newcomer takes the
-- last, a late waiter that came back the first); both keys outlive the turn by forget_ms.
local function waiters_tell(queue_key, told_key, waiter, place, now_ms, retry_at_ms, forget_ms)
  if not place.ticket then
    local edge = place.told and redis.call('ZRANGE', queue_key, 0, 0, 'WITHSCORES')
      or redis.call('ZRANGE', queue_key, -1, -1, 'WITHSCORES')
    redis.call('ZADD', queue_key, (tonumber(edge[2]) or 0) + (place.told and -1 or 1), waiter)
  end
  redis.call('ZADD', told_key, retry_at_ms, waiter)
  keep_until(queue_key, retry_at_ms - now_ms + forget_ms)
  keep_until(told_key, retry_at_ms - now_ms + forget_ms)
end
