"""Limiters (hookline.ports.Limiters) over RedisMemory: lua/rate_limit.lua and lua/concurrency_acquire.lua."""

from __future__ import annotations

from collections.abc import Sequence

from hookline.adapters.redis import keys as redis_keys
from hookline.domain.delivery import LimiterVerdict, Slot
from tests.fakes.faults import port_call
from tests.fakes.redis_role import FakeRedisRole


class FakeLimiters(FakeRedisRole):
    """Sliding-window logs and lease-expiring semaphores, under the adapter's key names."""

    @port_call
    def admit_rate(
        self, tenant: str, name: str, now_ms: int, limit: int, period_ms: int, token: str
    ) -> LimiterVerdict:
        """rate_limit.lua on the tenant's window called name."""
        return self._window(redis_keys.rate_key(tenant, name), now_ms, limit, period_ms, token)

    @port_call
    def admit_api_call(
        self, key_id: str, now_ms: int, limit: int, period_ms: int, token: str
    ) -> LimiterVerdict:
        """rate_limit.lua on the API key's window."""
        return self._window(redis_keys.api_rate_key(key_id), now_ms, limit, period_ms, token)

    def _window(self, key: str, now_ms: int, limit: int, period_ms: int, token: str) -> LimiterVerdict:
        """Admits while fewer than limit admissions fall in (now - period, now]; a known token re-scores."""
        m = self.memory
        with m.lock:
            m.zremrangebyscore(key, now_ms - period_ms)
            if m.zcard(key) < limit:
                m.zadd(key, now_ms, token)
                m.pexpire(key, period_ms)
                return LimiterVerdict(True, 0)
            oldest = m.zfirst(key)
            assert oldest is not None
            return LimiterVerdict(False, int(oldest[1]) + period_ms)

    @port_call
    def acquire_slot(self, slot: Slot, now_ms: int, limit: int, lease_expires_ms: int) -> LimiterVerdict:
        """concurrency_acquire.lua: admits a holder (or one again) while fewer than limit hold a lease."""
        key = redis_keys.concurrency_key(slot.tenant, slot.name)
        m = self.memory
        with m.lock:
            m.zremrangebyscore(key, now_ms)
            if m.zscore(key, slot.token) is not None or m.zcard(key) < limit:
                m.zadd(key, lease_expires_ms, slot.token)
                if m.pttl(key) < lease_expires_ms - now_ms:
                    m.pexpire(key, lease_expires_ms - now_ms)
                return LimiterVerdict(True, 0)
            earliest = m.zfirst(key)
            assert earliest is not None
            return LimiterVerdict(False, int(earliest[1]))

    @port_call
    def release_slots(self, slots: Sequence[Slot]) -> None:
        """ZREM of each slot's token (a slot not held is ignored)."""
        with self.memory.lock:
            for slot in slots:
                self.memory.zrem(redis_keys.concurrency_key(slot.tenant, slot.name), slot.token)
