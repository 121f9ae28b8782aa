-- dead_letter.lua: records a dead job on the dead stream and finishes its ready-stream entry.
-- Called after DynamoDB marked the job dead (DynamoDB is the record; the dead stream is a feed).
--
-- KEYS[1] ready     STREAM entries {m = member, d = deliveries}
-- KEYS[2] inflight  ZSET   member -> time it entered the ready stream (ms)
-- KEYS[3] dead      STREAM entries {m = member, reason = text, at = ms}
-- ARGV[1] group     consumer group name
-- ARGV[2] entry_id  the stream entry id being finished
-- ARGV[3] member    the entry's member
-- ARGV[4] reason    why the job died (error class or "status <code>")
-- ARGV[5] now_ms    current time (ms since epoch)
-- ARGV[6] max_len   the dead stream is trimmed to about this many entries
--
-- Returns the id of the new dead-stream entry, or false when the entry had already been finished (a repeated
-- call records nothing twice). O(log N) plus amortised trimming.
local ready_key, inflight_key, dead_key = KEYS[1], KEYS[2], KEYS[3]
local group, entry_id, member, reason = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local now_ms, max_len = ARGV[5], ARGV[6]

if redis.call('XACK', ready_key, group, entry_id) == 0 then
  return false
end
local dead_id = redis.call('XADD', dead_key, 'MAXLEN', '~', max_len, '*', 'm', member, 'reason', reason, 'at', now_ms)
redis.call('XDEL', ready_key, entry_id)
redis.call('ZREM', inflight_key, member)
return dead_id
