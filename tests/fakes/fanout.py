"""The fan-out's ledger of started executors (hookline.ports.ExecutorLedger) over RedisMemory, as
adapters/redis/fanout.py and lua/fanout_reserve.lua do it."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from hookline.adapters.redis import keys as redis_keys
from hookline.domain.delivery import FanOutGrant
from tests.fakes.faults import port_call
from tests.fakes.redis_role import FakeRedisRole


class FakeExecutorLedger(FakeRedisRole):
    """Grants and takes back executor launches in one ZSET shared by every promoter."""

    @port_call
    def reserve_executors(
        self, now_ms: int, wanted: int, most: int, ceiling: int, run_ms: int, start_ms: int
    ) -> FanOutGrant:
        """Drops tokens launched run_ms ago or more, grants wanted less those launched within start_ms,
        at most `most`, within the room under ceiling; the key expires run_ms after the call."""
        key, prefix = redis_keys.fan_out_key(), uuid.uuid4().hex
        m = self.memory
        with m.lock:
            m.zremrangebyscore(key, now_ms - run_ms)
            running = m.zcard(key)
            starting = running - m.zcount(key, now_ms - start_ms)
            granted = max(0, min(wanted - starting, most, ceiling - running))
            tokens = tuple(f"{prefix}:{n}" for n in range(1, granted + 1))
            for token in tokens:
                m.zadd(key, now_ms, token)
            m.pexpire(key, run_ms)
        return FanOutGrant(tokens, running + granted)

    @port_call
    def release_executors(self, tokens: Sequence[str]) -> None:
        """ZREM the tokens."""
        if tokens:
            with self.memory.lock:
                self.memory.zrem(redis_keys.fan_out_key(), *tokens)
