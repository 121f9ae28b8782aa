-- promote.lua: moves due members (score <= now) from the due ZSET onto the ready stream.
-- Atomic, so any number of promoters may run at once: each member is moved exactly once.
--
-- KEYS[1] due       ZSET   member -> due time (ms)
-- KEYS[2] ready     STREAM entries {m = member, d = deliveries}
-- KEYS[3] inflight  ZSET   member -> time it entered the ready stream (ms)
-- ARGV[1] now_ms    current time (ms since epoch); members due later stay
-- ARGV[2] batch     the most members to move in this call
-- KEYS[4] alive     STRING (optional) the promoter heartbeat of this shard: while it exists a promoter is
--                   running, and index.lua wakes none (the promoter's idle exit, usecases/idle.py)
-- ARGV[3] alive_ms  (optional, with KEYS[4]) how long the heartbeat lasts; a promoter sets it at every
--                   visit of the shard (each sweep at least), the backstop never does (it is no promoter)
--
-- Returns {moved, next_due_ms}: how many members were moved, and the due time of the earliest member
-- left (-1 when none is left). moved == batch means more may be due: the caller loops.
-- O(batch * log N).
-- @include ready_entry

local due_key, ready_key, inflight_key = KEYS[1], KEYS[2], KEYS[3]
local now_ms = tonumber(ARGV[1])
local batch = tonumber(ARGV[2])
if KEYS[4] ~= nil and tonumber(ARGV[3] or '0') > 0 then
  -- Relative expiry: the caller's clock and Redis's may differ.
  redis.call('SET', KEYS[4], '1', 'PX', tonumber(ARGV[3]))
end

local members = redis.call('ZRANGEBYSCORE', due_key, '-inf', now_ms, 'LIMIT', 0, batch)
move_to_ready(due_key, ready_key, inflight_key, members, now_ms)

local next_due = redis.call('ZRANGE', due_key, 0, 0, 'WITHSCORES')
if next_due[2] == nil then
  return {#members, -1}
end
return {#members, tonumber(next_due[2])}
