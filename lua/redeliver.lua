-- redeliver.lua: takes ready-stream entries whose consumer held them longer than a lease (it crashed or
-- hung) and puts each back on the stream as a new entry with its delivery count raised, so a live
-- executor reading new entries gets it at once. Entries already delivered max_deliveries times are not
-- re-added: they are returned for the caller to dead-letter (a poison message must not loop forever).
--
-- KEYS[1] ready     STREAM entries {m = member, d = deliveries}
-- KEYS[2] inflight  ZSET   member -> time it entered the ready stream (ms)
-- ARGV[1] group           consumer group name
-- ARGV[2] consumer        the reaper's consumer name (exhausted entries stay pending under it)
-- ARGV[3] min_idle_ms     only entries idle at least this long are taken (the lease)
-- ARGV[4] now_ms          current time (ms since epoch)
-- ARGV[5] batch           the most entries to take in this call
-- ARGV[6] max_deliveries  deliveries after which an entry is exhausted
-- ARGV[7] cursor          where to resume scanning the pending list ("0-0" to start)
--
-- Returns {redelivered, exhausted, next_cursor, malformed}: the count re-added, a flat list {entry_id, member,
-- ...} of the exhausted entries, the cursor to pass next ("0-0" means the whole pending list was scanned),
-- and a flat list {entry_id, member or "", ...} of malformed entries (no member, or a delivery count that is
-- not a number), left pending under the reaper for the caller to dead-letter: re-adding them would only
-- poison another reader.
-- (COUNT also counts pending entries that were deleted, so an empty batch does not mean the scan ended.)
-- Works with both XAUTOCLAIM reply shapes (2 elements on Redis 6.2, 3 on 7.x). O(batch * log N).
local ready_key, inflight_key = KEYS[1], KEYS[2]
local group, consumer = ARGV[1], ARGV[2]
local min_idle_ms, now_ms = ARGV[3], tonumber(ARGV[4])
local batch, max_deliveries = ARGV[5], tonumber(ARGV[6])
local cursor = ARGV[7]

local reply = redis.call('XAUTOCLAIM', ready_key, group, consumer, min_idle_ms, cursor, 'COUNT', batch)
local redelivered = 0
local exhausted, malformed = {}, {}
for _, entry in ipairs(reply[2]) do
  local entry_id, fields = entry[1], entry[2]
  if fields == false or fields == nil then
    -- Redis 6.2 returns deleted entries as nil: they can only be acknowledged.
    redis.call('XACK', ready_key, group, entry_id)
  else
    local member, deliveries = nil, 0
    for i = 1, #fields, 2 do
      if fields[i] == 'm' then member = fields[i + 1] end
      if fields[i] == 'd' then deliveries = tonumber(fields[i + 1]) end
    end
    if member == nil or deliveries == nil then
      table.insert(malformed, entry_id)
      table.insert(malformed, member or '')
    elseif deliveries + 1 >= max_deliveries then
      table.insert(exhausted, entry_id)
      table.insert(exhausted, member)
    else
      redis.call('XADD', ready_key, '*', 'm', member, 'd', deliveries + 1)
      redis.call('XACK', ready_key, group, entry_id)
      redis.call('XDEL', ready_key, entry_id)
      redis.call('ZADD', inflight_key, now_ms, member)
      redelivered = redelivered + 1
    end
  end
end
return {redelivered, exhausted, reply[1], malformed}
