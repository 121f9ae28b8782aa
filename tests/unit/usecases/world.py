"""A whole engine on fakes: one frozen clock, one fake Redis, one fake jobs table, scripted callbacks.

Use cases are built on demand, each Redis user with its own consumer name (as separate processes), all
sharing the same memory and tables, so a test can interleave two executors and a reaper exactly.

Lease timings (TIMING) are those of production scaled by ten, on the frozen clock. The heartbeat's threads
wait HEARTBEAT_MS of real time between beats (10 s), so in these millisecond tests they never beat: an
attempt's entry turns idle and its lease runs out as the test moves the clock, as for a stalled executor.
tests/unit/usecases/test_heartbeat.py drives the heartbeat itself.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hookline.adapters.redis import keys as redis_keys
from hookline.domain.leases import LeaseTiming
from hookline.domain.models import Job, JobRequest, Member
from hookline.usecases.execute import Disposition, Executor
from hookline.usecases.manage import JobManager
from hookline.usecases.promote import Promoter
from hookline.usecases.reap import Reaper
from hookline.usecases.reconcile import JobReconciler
from hookline.usecases.submit import JobSubmitter
from tests.fakes.callbacks import ScriptedCallbacks
from tests.fakes.clock import FrozenClock
from tests.fakes.index import FakeIndex
from tests.fakes.jobs import FakeJobStore
from tests.fakes.keys import StaticSecrets
from tests.fakes.metrics import RecordingMetrics
from tests.fakes.redis_memory import RedisMemory
from tests.fakes.tables import JobsTables
from tests.fakes.unindexed import FakeUnindexedLog

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
TENANT = "acme"
URL = "https://receiver.example/hook"
GROUP = redis_keys.CONSUMER_GROUP
LEASE_MS = 100_000
REDELIVER_AFTER_MS = 80_000
HEARTBEAT_MS = 10_000
TIMING = LeaseTiming(
    lease_ms=LEASE_MS,
    margin_ms=2_000,
    renew_below_ms=50_000,
    heartbeat_ms=HEARTBEAT_MS,
    redeliver_after_ms=REDELIVER_AFTER_MS,
    recover_every_ms=2_000,
)
MAX_DELIVERIES = 3
BACKOFF_S = 1.0  # min = max backoff: every retry waits exactly this long (jitter has no room)


@dataclass
class World:
    """The fakes of one engine and builders of its use cases."""

    clock: FrozenClock = field(default_factory=lambda: FrozenClock(T0))
    tables: JobsTables = field(default_factory=JobsTables)
    callbacks: ScriptedCallbacks = field(default_factory=ScriptedCallbacks)
    metrics: RecordingMetrics = field(default_factory=RecordingMetrics)
    shards: int = 1

    def __post_init__(self) -> None:
        self.memory = RedisMemory(self.clock)
        self.store = FakeJobStore(self.tables, lease_ms=LEASE_MS)
        self.index = self.redis("submitter")
        self.unindexed = FakeUnindexedLog()
        self._executors: dict[str, tuple[FakeIndex, Executor]] = {}

    def redis(self, consumer: str) -> FakeIndex:
        """Returns the Redis roles as one process (consumer) sees them."""
        return FakeIndex(self.memory, consumer, metrics=self.metrics)

    def sleep(self, seconds: float) -> None:
        """Spends a use case's sleep on the frozen clock (at least 1 ms, so loops move on)."""
        self.clock.advance(max(1, round(seconds * 1000)))

    def submitter(self) -> JobSubmitter:
        """Returns the submit use case (every URL allowed)."""
        return JobSubmitter(
            self.store,
            self.index,
            self.clock,
            lambda url: None,
            self.shards,
            self.metrics,
            unindexed=self.unindexed,
        )

    def submit(self, **fields: Any) -> Job:
        """Submits a job to URL with quick, deterministic retries; returns it as stored."""
        request = {"url": URL, "body": {"n": 1}, "min_backoff_s": BACKOFF_S, "max_backoff_s": BACKOFF_S}
        request.update({"timeout_s": 5, **fields})
        return self.submitter().submit(TENANT, JobRequest.model_validate(request)).job

    def executor(self, consumer: str = "executor", **options: Any) -> Executor:
        """Returns the executor of consumer (the same one on every call), its group made on shard 0."""
        if consumer not in self._executors:
            redis = self.redis(consumer)
            for shard in range(self.shards):
                redis.ensure_group(shard)
            parts: dict[str, Any] = {
                "store": self.store,
                "stream": redis,
                "due": redis,
                "limiters": redis,
                "clock": self.clock,
                "callbacks": self.callbacks,
                "secrets": StaticSecrets(),
                "metrics": self.metrics,
                "shards": list(range(self.shards)),
                "concurrency": 4,
                "rng": random.Random(7),
                "timing": TIMING,
                "max_deliveries": MAX_DELIVERIES,
                "unindexed": self.unindexed,
            }
            executor = Executor(**{**parts, **options})
            self._executors[consumer] = (redis, executor)
        return self._executors[consumer][1]

    def executor_redis(self, consumer: str = "executor") -> FakeIndex:
        """Returns the Redis roles an executor built by executor() uses (to plan its faults)."""
        self.executor(consumer)
        return self._executors[consumer][0]

    def drain(self, consumer: str = "executor") -> list[Disposition | None]:
        """Processes, in this thread, every entry ready now, as consumer."""
        return self.executor(consumer).drain()

    def reaper(
        self,
        redis: FakeIndex | None = None,
        store: FakeJobStore | None = None,
        sleep: Callable[[float], None] | None = None,
        readd_grace_ms: int = 0,
    ) -> Reaper:
        """Returns a reaper (consumer "reaper") with the world's timings, whose sleeps spend the clock."""
        redis = redis or self.redis("reaper")
        store = store or self.store
        return Reaper(
            store,
            redis,
            redis,
            self.clock,
            list(range(self.shards)),
            self.metrics,
            redeliver_after_ms=REDELIVER_AFTER_MS,
            max_deliveries=MAX_DELIVERIES,
            jobs=JobReconciler(store, redis, redis, self.clock, unindexed=self.unindexed),
            sleep=sleep or self.sleep,
            readd_grace_ms=readd_grace_ms,
        )

    def reap(self) -> None:
        """Runs a reaper once (with a deadline far enough to reconcile everything)."""
        self.reaper().run(self.clock.now_ms() + 60_000)

    def promoter(self, redis: FakeIndex | None = None, **options: Any) -> Promoter:
        """Returns a promoter whose sleeps advance the frozen clock."""
        return Promoter(
            redis or self.redis("promoter"),
            self.clock,
            list(range(self.shards)),
            self.metrics,
            sleep=self.sleep,
            **options,
        )

    def manager(self, redis: FakeIndex | None = None, **options: Any) -> JobManager:
        """Returns the job administration use case."""
        return JobManager(
            self.store, redis or self.index, self.clock, self.metrics, unindexed=self.unindexed, **options
        )

    def job(self, job: Job) -> Job:
        """Returns the job as the store holds it now."""
        return self.store.get(job.tenant, job.job_id)

    def state(self, shard: int = 0) -> dict[str, Any]:
        """Reads a shard's Redis keys: due, ready (fields), pending (member, consumer, deliveries), inflight,
        wake (tokens), dead (fields)."""
        m = self.memory
        ready = m.stream(redis_keys.ready_stream(shard))
        member_of = {entry_id: fields.get("m", "?") for entry_id, fields in ready}
        return {
            "due": m.zset(redis_keys.due_key(shard)),
            "ready": [fields for _, fields in ready],
            "pending": [
                (member_of.get(entry_id, f"<deleted {entry_id}>"), consumer, count)
                for entry_id, consumer, count in m.pending(redis_keys.ready_stream(shard), GROUP)
            ],
            "inflight": m.zset(redis_keys.inflight_key(shard)),
            "wake": m.list_length(redis_keys.wake_key(shard)),
            "dead": [fields for _, fields in m.stream(redis_keys.dead_stream(shard))],
        }

    def holders(self, tenant: str, name: str) -> dict[str, float]:
        """Returns the holders of a tenant's concurrency semaphore (token -> lease expiry)."""
        return self.memory.zset(redis_keys.concurrency_key(tenant, name))


def idle_state(**keys: Any) -> dict[str, Any]:
    """Builds an expected shard state; keys not named are empty."""
    empty: dict[str, Any] = {"due": {}, "ready": [], "pending": [], "inflight": {}, "wake": 0, "dead": []}
    return {**empty, **keys}


def entry(member: Member, deliveries: int = 0) -> dict[str, str]:
    """Returns the fields of a ready-stream entry."""
    return {"m": member.encode(), "d": str(deliveries)}


def member(job: Job, generation: int | None = None) -> str:
    """Returns the encoded member of job (in its own or the given generation)."""
    return Member(
        job.tenant, job.job_id, job.generation if generation is None else generation, job.flow
    ).encode()
