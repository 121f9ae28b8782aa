-- wake_claim.lua: whether the caller must start a promoter for a member or schedule due soon (idle mode).
-- A fragment, never loaded alone (see waiter_queue.lua); it reads no KEYS or ARGV: the including script
-- passes them in.
--
-- alive  STRING  the shard's promoter heartbeat (promote.lua sets it at each visit): a promoter is running
-- claim  STRING  the wake claim: SET NX PX, so one caller in a burst starts a promoter
--
-- Returns: wake_claim returns 2 when the caller took the claim and must start a promoter (the due time is
-- within horizon_ms of now_ms, or past, and no heartbeat exists), else 0. O(1).

-- alive_key and claim_key may be nil (the caller passed no wake keys): never wake then, nor with horizon 0.
local function wake_claim(alive_key, claim_key, due_ms, now_ms, horizon_ms, claim_ms)
  if claim_key == nil or horizon_ms <= 0 or due_ms - now_ms > horizon_ms then
    return 0
  end
  if redis.call('EXISTS', alive_key) == 1 then
    return 0
  end
  if redis.call('SET', claim_key, '1', 'NX', 'PX', claim_ms) then
    return 2
  end
  return 0
end
