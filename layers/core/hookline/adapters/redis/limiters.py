"""Limiters: sliding rate windows and lease-expiring semaphores, each one Lua script on one key."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.base import RedisBase
from hookline.domain.delivery import LimiterVerdict, Slot


class RedisLimiters(RedisBase):
    """Asks and frees the limiters; builds their key names itself (hookline.ports.Limiters)."""

    def admit_rate(
        self, tenant: str, name: str, now_ms: int, limit: int, period_ms: int, token: str
    ) -> LimiterVerdict:
        """Asks the tenant's sliding-window limiter called name to admit one more event."""
        return self._window(redis_keys.rate_key(tenant, name), now_ms, limit, period_ms, token)

    def admit_api_call(
        self, key_id: str, now_ms: int, limit: int, period_ms: int, token: str
    ) -> LimiterVerdict:
        """Asks the API key's sliding-window limiter to admit one more request."""
        return self._window(redis_keys.api_rate_key(key_id), now_ms, limit, period_ms, token)

    def _window(self, key: str, now_ms: int, limit: int, period_ms: int, token: str) -> LimiterVerdict:
        admitted, retry_at = cast(
            list[int], self._scripts["rate_limit"](keys=[key], args=[now_ms, limit, period_ms, token])
        )
        return LimiterVerdict(int(admitted) == 1, int(retry_at))

    def acquire_slot(self, slot: Slot, now_ms: int, limit: int, lease_expires_ms: int) -> LimiterVerdict:
        """Asks the slot's semaphore for a place held until lease_expires_ms or release."""
        key = redis_keys.concurrency_key(slot.tenant, slot.name)
        admitted, retry_at, held = cast(
            list[int],
            self._scripts["concurrency_acquire"](
                keys=[key], args=[now_ms, limit, slot.token, lease_expires_ms]
            ),
        )
        return LimiterVerdict(int(admitted) == 1, int(retry_at), already_held=int(held) == 1)

    def release_slots(self, slots: Sequence[Slot]) -> None:
        """Frees concurrency slots (one pipelined round trip; a slot not held is ignored)."""
        if not slots:
            return
        pipe = self._redis.pipeline(transaction=False)
        for slot in slots:
            pipe.zrem(redis_keys.concurrency_key(slot.tenant, slot.name), slot.token)
        pipe.execute()
