-- fanout_reserve.lua: reserves executor launches for the fan-out, shared by every promoter, within a ceiling.
-- The ledger holds one token per executor the fan-out started, scored by its launch time; a token counts
-- as running for run_ms after its launch (how long a started executor reads) and as starting for start_ms
-- (its cold start: until it reads, the backlog does not show it). Atomic, so overlapping promoters neither
-- launch for the same backlog twice nor together pass the ceiling.
--
-- KEYS[1] ledger    ZSET   token -> launch time (ms)
-- ARGV[1] now_ms    current time (ms since epoch)
-- ARGV[2] wanted    executors the backlog calls for beyond those reading now
-- ARGV[3] most      the most tokens one call may grant
-- ARGV[4] ceiling   the most tokens running at once
-- ARGV[5] run_ms    how long a token counts as running
-- ARGV[6] start_ms  how long a token counts as starting (at most run_ms)
-- ARGV[7] prefix    a prefix unique to this call; the tokens granted are prefix:1 .. prefix:n
--
-- Returns {granted, running}: how many tokens were added (wanted less those starting, capped by most and
-- by the room under the ceiling; never negative), and how many are running counting them.
-- O(log N + expired) for N tokens.
local ledger_key = KEYS[1]
local now_ms = tonumber(ARGV[1])
local wanted, most, ceiling = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local run_ms, start_ms = tonumber(ARGV[5]), tonumber(ARGV[6])
local prefix = ARGV[7]

redis.call('ZREMRANGEBYSCORE', ledger_key, '-inf', now_ms - run_ms)
local running = redis.call('ZCARD', ledger_key)
local starting = redis.call('ZCOUNT', ledger_key, '(' .. (now_ms - start_ms), '+inf')
local granted = math.max(0, math.min(wanted - starting, most, ceiling - running))
for i = 1, granted do
  redis.call('ZADD', ledger_key, now_ms, prefix .. ':' .. i)
end
if redis.call('EXISTS', ledger_key) == 1 then
  -- Relative expiry: the caller's clock and Redis's may differ, so never hand Redis an absolute instant.
  redis.call('PEXPIRE', ledger_key, run_ms)
end
return {granted, running + granted}
