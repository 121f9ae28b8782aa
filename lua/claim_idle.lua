-- claim_idle.lua: an executor takes over, in place, ready-stream entries whose consumer held them longer
-- than a lease (it crashed or hung), so they are served ahead of any backlog of new entries: re-adding them
-- at the tail (redeliver.lua) would queue them behind every entry not yet read.
-- The entry keeps its id and moves to this consumer's pending list (XCLAIM raises its delivery count); its
-- deliveries so far are its `d` field plus the times the group handed it out before this claim. An entry
-- whose deliveries reach max_deliveries is claimed too but returned as exhausted, for the caller to
-- dead-letter (a poison message must not loop forever); an entry with no member or an unreadable count is
-- returned as malformed, left pending under this consumer for the caller to dead-letter.
--
-- KEYS[1] ready     STREAM entries {m = member, d = deliveries}
-- KEYS[2] inflight  ZSET   member -> time it entered the ready stream (ms)
-- ARGV[1] group           consumer group name
-- ARGV[2] consumer        this executor's consumer name (the claimed entries become pending under it)
-- ARGV[3] min_idle_ms     only entries idle at least this long are taken (the lease)
-- ARGV[4] now_ms          current time (ms since epoch)
-- ARGV[5] count           the most entries to take in this call (the caller's free delivery slots)
-- ARGV[6] max_deliveries  deliveries after which an entry is exhausted
--
-- Returns {claimed, exhausted, malformed}: flat lists {entry_id, member, deliveries, ...} of the entries to
-- deliver now, {entry_id, member, ...} of the exhausted ones and {entry_id, member or "", ...} of the
-- malformed ones. An idle entry deleted from the stream is only acknowledged.
-- XPENDING's IDLE filter walks the pending list (every delivery in flight on the shard) until it has
-- `count` idle entries: O(P + count * log N) for P pending entries; the caller runs it about once a second.
local ready_key, inflight_key = KEYS[1], KEYS[2]
local group, consumer = ARGV[1], ARGV[2]
local min_idle_ms, now_ms = ARGV[3], tonumber(ARGV[4])
local count, max_deliveries = ARGV[5], tonumber(ARGV[6])

local idle = redis.call('XPENDING', ready_key, group, 'IDLE', min_idle_ms, '-', '+', count)
local claimed, exhausted, malformed = {}, {}, {}
for _, row in ipairs(idle) do
  local entry_id, handed_out = row[1], tonumber(row[4])
  local got = redis.call('XCLAIM', ready_key, group, consumer, min_idle_ms, entry_id)
  local first = got[1]
  if first == nil or first == false or first[2] == nil or first[2] == false then
    -- Deleted from the stream (Redis 7 drops it from the pending list and returns nothing; 6.2 returns
    -- nil): it can only be acknowledged.
    redis.call('XACK', ready_key, group, entry_id)
  else
    local fields = first[2]
    local member, deliveries = nil, 0
    for i = 1, #fields, 2 do
      if fields[i] == 'm' then member = fields[i + 1] end
      if fields[i] == 'd' then deliveries = tonumber(fields[i + 1]) end
    end
    if member == nil or deliveries == nil then
      table.insert(malformed, entry_id)
      table.insert(malformed, member or '')
    else
      deliveries = deliveries + handed_out
      if deliveries >= max_deliveries then
        table.insert(exhausted, entry_id)
        table.insert(exhausted, member)
      else
        redis.call('ZADD', inflight_key, now_ms, member)
        table.insert(claimed, entry_id)
        table.insert(claimed, member)
        table.insert(claimed, deliveries)
      end
    end
  end
end
return {claimed, exhausted, malformed}
