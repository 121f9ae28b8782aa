-- heartbeat.lua: resets the idle time of the ready-stream entries this consumer still holds, so that no
-- recoverer re-delivers them while their attempts run: an entry turns idle only once its executor is gone.
-- An entry that another consumer took over meanwhile (it was re-delivered) is left alone, never taken back.
--
-- KEYS[1] ready     STREAM entries {m = member, d = deliveries}
-- ARGV[1] group     consumer group name
-- ARGV[2] consumer  this executor's consumer name
-- ARGV[3..] entry_ids  the entries its attempts are working on
--
-- Returns the ids still pending under this consumer (their idle time is now 0; their delivery counts are
-- unchanged, as XCLAIM with JUSTID does not count a delivery). O(k log N) for k ids; the caller passes at
-- most its concurrency.
local ready_key = KEYS[1]
local group, consumer = ARGV[1], ARGV[2]

local held = {}
for i = 3, #ARGV do
  local entry_id = ARGV[i]
  local pending = redis.call('XPENDING', ready_key, group, entry_id, entry_id, 1, consumer)
  if #pending > 0 then
    redis.call('XCLAIM', ready_key, group, consumer, 0, entry_id, 'JUSTID')
    table.insert(held, entry_id)
  end
end
return held
