"""The fan-out's ledger of started executors (hookline.ports.ExecutorLedger): one ZSET, fanout_reserve.lua."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import cast

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.base import RedisBase
from hookline.domain.delivery import FanOutGrant


class RedisExecutorLedger(RedisBase):
    """Grants and takes back executor launches; every promoter shares the one key (its own hash tag)."""

    def reserve_executors(
        self, now_ms: int, wanted: int, most: int, ceiling: int, run_ms: int, start_ms: int
    ) -> FanOutGrant:
        """Runs fanout_reserve.lua: tokens for wanted less those starting, at most `most`, within ceiling."""
        prefix = uuid.uuid4().hex
        granted, running = cast(
            list[int],
            self._scripts["fanout_reserve"](
                keys=[redis_keys.fan_out_key()],
                args=[now_ms, wanted, most, ceiling, run_ms, start_ms, prefix],
            ),
        )
        tokens = tuple(f"{prefix}:{n}" for n in range(1, int(granted) + 1))
        return FanOutGrant(tokens, int(running))

    def release_executors(self, tokens: Sequence[str]) -> None:
        """ZREM the tokens (one not held is ignored)."""
        if tokens:
            self._redis.zrem(redis_keys.fan_out_key(), *tokens)

    def mark_executor_alive(self, ttl_ms: int) -> None:
        """SET the executor heartbeat with a relative expiry (every executor refreshes the one key)."""
        self._redis.set(redis_keys.executor_alive_key(), b"1", px=max(1, ttl_ms))

    def clear_executor_alive(self) -> None:
        """DEL the executor heartbeat (an executor ending idle)."""
        self._redis.delete(redis_keys.executor_alive_key())

    def executor_alive(self) -> bool:
        """Tells whether the executor heartbeat exists."""
        return int(self._redis.exists(redis_keys.executor_alive_key())) == 1
