"""Limiters: sliding rate windows and lease-expiring semaphores, each one Lua script on one key's slot.

Both queue the deliveries they refuse (a waiter is the delivery's job:generation token) and tell each when
its turn comes, so a busy key costs O(1) refusals per delivery rather than a retry every period.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.base import RedisBase
from hookline.domain.delivery import LimiterVerdict, Slot

# A waiter this late for its turn (promoter lag, an executor backlog) stops holding back the waiters
# behind it: it may never come (cancelled, dead-lettered). If it does come before WAITER_FORGET_MS, it
# goes first.
WAITER_LATE_MS = 2_000
WAITER_FORGET_MS = 300_000
# The hold time a concurrency key's waiters expect until a holder of the key was first released. Short:
# a waiter told too early is refused again with a longer estimate (the overrun rule in the script), one
# told too late leaves the slot idle meanwhile.
DEFAULT_HOLD_MS = 200
# How long a concurrency key's typical hold time outlives its last release.
HOLD_KEEP_MS = 86_400_000


class RedisLimiters(RedisBase):
    """Asks and frees the limiters; builds their key names itself (hookline.ports.Limiters)."""

    def admit_rate(
        self, tenant: str, name: str, now_ms: int, limit: int, period_ms: int, token: str, waiter: str = ""
    ) -> LimiterVerdict:
        """Asks the tenant's sliding-window limiter called name to admit one more event.

        A waiter (a delivery that will come back at retry_at) is queued when refused; "" queues nothing.
        """
        keys = [
            redis_keys.rate_key(tenant, name),
            redis_keys.rate_queue_key(tenant, name),
            redis_keys.rate_told_key(tenant, name),
        ]
        return self._window(keys, now_ms, limit, period_ms, token, waiter)

    def admit_api_call(
        self, key_id: str, now_ms: int, limit: int, period_ms: int, token: str
    ) -> LimiterVerdict:
        """Asks the API key's sliding-window limiter to admit one more request (requests are not queued)."""
        keys = [redis_keys.api_rate_key(key_id), *redis_keys.api_queue_keys(key_id)]
        return self._window(keys, now_ms, limit, period_ms, token, "")

    def _window(
        self, keys: list[str], now_ms: int, limit: int, period_ms: int, token: str, waiter: str
    ) -> LimiterVerdict:
        args: list[str | int] = [now_ms, limit, period_ms, token, waiter, WAITER_LATE_MS, WAITER_FORGET_MS]
        admitted, retry_at = cast(list[int], self._scripts["rate_limit"](keys=keys, args=args))
        return LimiterVerdict(int(admitted) == 1, int(retry_at))

    def acquire_slot(self, slot: Slot, now_ms: int, limit: int, lease_expires_ms: int) -> LimiterVerdict:
        """Asks the slot's semaphore for a place held until lease_expires_ms or release."""
        keys = [
            redis_keys.concurrency_key(slot.tenant, slot.name),
            redis_keys.concurrency_started_key(slot.tenant, slot.name),
            redis_keys.concurrency_queue_key(slot.tenant, slot.name),
            redis_keys.concurrency_told_key(slot.tenant, slot.name),
            redis_keys.concurrency_hold_key(slot.tenant, slot.name),
        ]
        args: list[str | int] = [
            now_ms,
            limit,
            slot.token,
            lease_expires_ms,
            DEFAULT_HOLD_MS,
            WAITER_LATE_MS,
            WAITER_FORGET_MS,
        ]
        admitted, retry_at, held = cast(list[int], self._scripts["concurrency_acquire"](keys=keys, args=args))
        return LimiterVerdict(int(admitted) == 1, int(retry_at), already_held=int(held) == 1)

    def release_slots(self, slots: Sequence[Slot]) -> None:
        """Frees concurrency slots (a slot not held is ignored).

        Each release also teaches its key how long holders hold (timed on this adapter's clock). One node
        takes them in one pipelined round trip; a cluster client refuses scripts inside a pipeline (it
        could not load one a node lacks), so there each release is its own call, on its key's node.
        """
        if not slots:
            return
        now_ms = self._clock.now_ms()
        release = self._scripts["concurrency_release"]
        pipe = None if self._cluster else self._redis.pipeline(transaction=False)
        for slot in slots:
            keys = [
                redis_keys.concurrency_key(slot.tenant, slot.name),
                redis_keys.concurrency_started_key(slot.tenant, slot.name),
                redis_keys.concurrency_hold_key(slot.tenant, slot.name),
            ]
            release(keys=keys, args=[now_ms, slot.token, HOLD_KEEP_MS], client=pipe)
        if pipe is not None:
            pipe.execute()
