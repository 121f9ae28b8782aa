"""The queues' Redis role (hookline.ports.QueueGate) over RedisMemory: lua/queue_admit.lua, park.lua and
unpark.lua line for line, under the adapter's key names (adapters/redis/queues.py).

The admission reuses the limiter fakes' semaphore and rate window (the scripts share lua/shared fragments).
The shard's parked-queues SET is kept as a hash of member -> "1" (RedisMemory models no SET).
"""

from __future__ import annotations

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.queues import SETTINGS_TTL_MS, queue_member, settings_keys
from hookline.domain.delivery import Slot, StreamEntry
from hookline.domain.queues import Admission, Queue, QueueFigures, QueueVerdict, limiter_name
from tests.fakes.faults import port_call
from tests.fakes.limiters import FakeLimiters

GROUP = redis_keys.CONSUMER_GROUP
_SETTINGS = ("limit", "period_ms", "max_concurrency", "paused_since_ms")


class FakeQueues(FakeLimiters):
    """Queue settings, one-call admissions and parked deliveries per shard."""

    @port_call
    def admit(
        self, tenant: str, queue: str, entry: StreamEntry, now_ms: int, lease_expires_ms: int
    ) -> QueueVerdict:
        """queue_admit.lua: settings, pause, then the semaphore, then the rate window (a rate refusal gives
        back the slot this call took)."""
        settings_key, holders, started, *_ = settings_keys(tenant, queue)
        log, rate_queue, rate_told = redis_keys.queue_rate_keys(tenant, queue)
        waiter = f"{entry.member.job_id}:{entry.member.generation}"
        m = self.memory
        with m.lock:
            found = [m.hget(settings_key, name) for name in _SETTINGS]
            if found[0] is None:
                return QueueVerdict(Admission.UNKNOWN)
            limit, period_ms, max_concurrency, paused_since_ms = (int(value or 0) for value in found)
            if paused_since_ms > 0:
                return QueueVerdict(Admission.PAUSED, paused_since_ms)
            took_slot = False
            if max_concurrency > 0:
                slot = Slot(tenant, limiter_name(queue), waiter)
                verdict = FakeLimiters.acquire_slot.__wrapped__(  # type: ignore[attr-defined]
                    self, slot, now_ms, max_concurrency, lease_expires_ms
                )
                if not verdict.admitted:
                    return QueueVerdict(Admission.REFUSED, verdict.retry_at_ms)
                took_slot = not verdict.already_held
            if limit > 0:
                verdict = self._window(
                    (log, rate_queue, rate_told), now_ms, limit, period_ms, entry.entry_id, waiter
                )
                if not verdict.admitted:
                    if took_slot:
                        m.zrem(holders, waiter)
                        m.zrem(started, waiter)
                    return QueueVerdict(Admission.REFUSED, verdict.retry_at_ms)
            return QueueVerdict(Admission.ADMITTED, took_slot=took_slot)

    @port_call
    def write_settings(self, queue: Queue) -> None:
        """HSET the four settings (replacing the hash) and PEXPIRE SETTINGS_TTL_MS, atomically."""
        key = redis_keys.queue_settings_key(queue.tenant, queue.name)
        values = (queue.rate_limit, queue.rate_period_ms, queue.max_concurrency, queue.paused_since_ms)
        m = self.memory
        with m.lock:
            for name, value in zip(_SETTINGS, values, strict=True):
                m.hset(key, name, str(value))
            m.pexpire(key, SETTINGS_TTL_MS)

    @port_call
    def forget_settings(self, tenant: str, name: str) -> None:
        """DEL the settings hash."""
        key = redis_keys.queue_settings_key(tenant, name)
        with self.memory.lock:
            for field in _SETTINGS:
                self.memory.hdel(key, field)

    @port_call
    def park(self, entry: StreamEntry, queue: str, now_ms: int) -> bool:
        """park.lua: finishes the entry, parks its member (first parking time kept), lists the queue."""
        shard, tenant, member = entry.shard, entry.member.tenant, entry.member.encode()
        ready, parked = redis_keys.ready_stream(shard), redis_keys.parked_key(shard, tenant, queue)
        m = self.memory
        with m.lock:
            if m.xack(ready, GROUP, entry.entry_id) == 0:
                return False
            m.xdel(ready, entry.entry_id)
            m.zrem(redis_keys.inflight_key(shard), member)
            if m.zscore(parked, member) is None:
                m.zadd(parked, now_ms, member)
            m.hset(redis_keys.parked_queues_key(shard), queue_member(tenant, queue), "1")
            return True

    @port_call
    def unpark(self, shard: int, tenant: str, queue: str, now_ms: int, batch: int) -> tuple[int, int]:
        """unpark.lua: the oldest parked members onto the ready stream; unlists the queue once none left."""
        parked = redis_keys.parked_key(shard, tenant, queue)
        m = self.memory
        with m.lock:
            members = [name for name, _ in m.zordered(parked)[:batch]]
            for member in members:
                m.xadd(redis_keys.ready_stream(shard), {"m": member, "d": "0"})
                m.zadd(redis_keys.inflight_key(shard), now_ms, member)
            if members:
                m.zrem(parked, *members)
            left = m.zcard(parked)
            if left == 0:
                m.hdel(redis_keys.parked_queues_key(shard), queue_member(tenant, queue))
            return len(members), left

    @port_call
    def parked_queues(self, shard: int) -> list[tuple[str, str]]:
        """SMEMBERS of the shard's parked-queues SET, as (tenant, queue), sorted."""
        names = sorted(self.memory.hash(redis_keys.parked_queues_key(shard)))
        return [(tenant, queue) for tenant, _, queue in (name.rpartition("/") for name in names)]

    @port_call
    def figures(self, queue: Queue, shards: int, now_ms: int) -> QueueFigures:
        """The adapter's ZCARDs and ZCOUNTs."""
        tenant, name = queue.tenant, queue.name
        limiter = limiter_name(name)
        log, rate_queue, _ = redis_keys.queue_rate_keys(tenant, name)
        m = self.memory
        with m.lock:
            parked = sum(m.zcard(redis_keys.parked_key(s, tenant, name)) for s in range(shards))
            holders = m.zset(redis_keys.concurrency_key(tenant, limiter))
            in_window = [t for t in m.zset(log).values() if t > now_ms - queue.rate_period_ms]
            turns = m.zcard(redis_keys.concurrency_queue_key(tenant, limiter)) + m.zcard(rate_queue)
            return QueueFigures(
                parked, turns, sum(1 for lease in holders.values() if lease > now_ms), len(in_window)
            )
