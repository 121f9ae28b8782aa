"""Named queues in Redis: live settings, one-call admission (queue_admit.lua), parked deliveries per shard.

A queue's settings, semaphore and rate window share the hash tag of its semaphore; its parked deliveries
sit in each shard's own keys (park.lua, unpark.lua), so every script touches one slot.
"""

from __future__ import annotations

from typing import cast

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.base import RedisBase, text
from hookline.adapters.redis.limiters import DEFAULT_HOLD_MS, WAITER_FORGET_MS, WAITER_LATE_MS
from hookline.domain.delivery import StreamEntry
from hookline.domain.queues import Admission, Queue, QueueFigures, QueueVerdict, limiter_name

# How long Redis keeps a queue's live settings without a write: when they are gone (expired, flushed, a
# write lost), the next delivery reads the record from DynamoDB and writes them again. Bounds how long a lost
# pause, resume or re-limit goes unnoticed by deliveries.
SETTINGS_TTL_MS = 60_000


def settings_keys(tenant: str, queue: str) -> list[str]:
    """Returns queue_admit.lua's KEYS, in order."""
    name = limiter_name(queue)
    return [
        redis_keys.queue_settings_key(tenant, queue),
        redis_keys.concurrency_key(tenant, name),
        redis_keys.concurrency_started_key(tenant, name),
        redis_keys.concurrency_queue_key(tenant, name),
        redis_keys.concurrency_told_key(tenant, name),
        redis_keys.concurrency_hold_key(tenant, name),
        *redis_keys.queue_rate_keys(tenant, queue),
    ]


def queue_member(tenant: str, queue: str) -> str:
    """Returns a queue's name in a shard's parked-queues SET."""
    return f"{tenant}/{queue}"


class RedisQueues(RedisBase):
    """The queues' live settings, admissions and parked deliveries (hookline.ports.QueueGate)."""

    def admit(
        self, tenant: str, queue: str, entry: StreamEntry, now_ms: int, lease_expires_ms: int
    ) -> QueueVerdict:
        """Asks the queue to admit a delivery: settings, pause, concurrency and rate in one call."""
        member = entry.member
        args: list[str | int] = [
            now_ms,
            entry.entry_id,
            f"{member.job_id}:{member.generation}",
            lease_expires_ms,
            DEFAULT_HOLD_MS,
            WAITER_LATE_MS,
            WAITER_FORGET_MS,
        ]
        code, retry_at, took = cast(
            list[int], self._scripts["queue_admit"](keys=settings_keys(tenant, queue), args=args)
        )
        return QueueVerdict(Admission(int(code)), int(retry_at), took_slot=int(took) == 1)

    def write_settings(self, queue: Queue) -> None:
        """Writes the queue's live settings, to expire after SETTINGS_TTL_MS (one atomic MULTI)."""
        key = redis_keys.queue_settings_key(queue.tenant, queue.name)
        pipe = self._redis.pipeline(transaction=True)
        pipe.delete(key)
        pipe.hset(
            key,
            mapping={
                "limit": queue.rate_limit,
                "period_ms": queue.rate_period_ms,
                "max_concurrency": queue.max_concurrency,
                "paused_since_ms": queue.paused_since_ms,
            },
        )
        pipe.pexpire(key, SETTINGS_TTL_MS)
        pipe.execute()

    def forget_settings(self, tenant: str, name: str) -> None:
        """Removes a deleted queue's live settings (its deliveries then find no record and pass)."""
        self._redis.delete(redis_keys.queue_settings_key(tenant, name))

    def park(self, entry: StreamEntry, queue: str, now_ms: int) -> bool:
        """Sets a delivery of a paused queue aside (park.lua); False when it had been finished already."""
        shard, tenant = entry.shard, entry.member.tenant
        keys = [
            redis_keys.ready_stream(shard),
            redis_keys.inflight_key(shard),
            redis_keys.parked_key(shard, tenant, queue),
            redis_keys.parked_queues_key(shard),
        ]
        args: list[str | int] = [
            redis_keys.CONSUMER_GROUP,
            entry.entry_id,
            entry.member.encode(),
            now_ms,
            queue_member(tenant, queue),
        ]
        return int(cast(int, self._scripts["park"](keys=keys, args=args))) == 1

    def unpark(self, shard: int, tenant: str, queue: str, now_ms: int, batch: int) -> tuple[int, int]:
        """Releases up to batch parked deliveries onto the ready stream (unpark.lua); returns (moved, left)"""
        keys = [
            redis_keys.parked_key(shard, tenant, queue),
            redis_keys.ready_stream(shard),
            redis_keys.inflight_key(shard),
            redis_keys.parked_queues_key(shard),
        ]
        wake_keys, wake_args = self._wake_call(shard)
        args: list[str | int] = [now_ms, batch, queue_member(tenant, queue), *wake_args]
        moved, left, wake = cast(list[int], self._scripts["unpark"](keys=keys + wake_keys, args=args))
        # In idle mode no promoter (and so no executor) may be running: start one, as a submit does.
        self._woke(shard, int(wake))
        return int(moved), int(left)

    def parked_queues(self, shard: int) -> list[tuple[str, str]]:
        """Returns the (tenant, queue) pairs that may have parked deliveries in the shard."""
        names = sorted(text(name) for name in self._redis.smembers(redis_keys.parked_queues_key(shard)))
        return [(tenant, queue) for tenant, _, queue in (name.rpartition("/") for name in names)]

    def figures(self, queue: Queue, shards: int, now_ms: int) -> QueueFigures:
        """Returns the queue's live figures: one pipelined round trip (one call per key on a cluster)."""
        tenant, name = queue.tenant, queue.name
        limiter = limiter_name(name)
        rate_log, rate_queue, _ = redis_keys.queue_rate_keys(tenant, name)
        window_start = now_ms - queue.rate_period_ms
        if self._cluster:
            parked = sum(
                int(self._redis.zcard(redis_keys.parked_key(s, tenant, name))) for s in range(shards)
            )
            in_flight = int(
                self._redis.zcount(redis_keys.concurrency_key(tenant, limiter), f"({now_ms}", "+inf")
            )
            turns = int(self._redis.zcard(redis_keys.concurrency_queue_key(tenant, limiter)))
            turns += int(self._redis.zcard(rate_queue))
            in_window = int(self._redis.zcount(rate_log, f"({window_start}", "+inf"))
            return QueueFigures(parked, turns, in_flight, in_window)
        pipe = self._redis.pipeline(transaction=False)
        for shard in range(shards):
            pipe.zcard(redis_keys.parked_key(shard, tenant, name))
        pipe.zcount(redis_keys.concurrency_key(tenant, limiter), f"({now_ms}", "+inf")
        pipe.zcard(redis_keys.concurrency_queue_key(tenant, limiter))
        pipe.zcard(rate_queue)
        pipe.zcount(rate_log, f"({window_start}", "+inf")
        replies = [int(reply) for reply in pipe.execute()]
        parked, (in_flight, cc_turns, rate_turns, in_window) = sum(replies[:shards]), replies[shards:]
        return QueueFigures(parked, cc_turns + rate_turns, in_flight, in_window)
