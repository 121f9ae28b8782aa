"""What every Redis role fake shares: the memory, this process's consumer name, clock and metrics, faults."""

from __future__ import annotations

from hookline.ports import Clock, MetricsSink, NullMetrics
from tests.fakes.faults import Faults, redis_down
from tests.fakes.redis_memory import RedisMemory


class FakeRedisRole:
    """Holds the shared memory (one Redis), the consumer name and the calls' fault plan.

    As adapters/redis/base.py RedisBase, a role has a clock of its own (the process's, by default the
    memory's, i.e. Redis's) for the times it writes itself, and a metrics sink for what it counts.
    """

    def __init__(
        self,
        memory: RedisMemory,
        consumer: str = "executor",
        clock: Clock | None = None,
        metrics: MetricsSink | None = None,
    ) -> None:
        self.memory = memory
        self.consumer = consumer
        self.clock: Clock = clock or memory.clock
        self.metrics: MetricsSink = metrics or NullMetrics()
        self._faults = Faults(redis_down)

    @property
    def faults(self) -> Faults:
        """Returns the fault plan of this fake's calls (default error: IndexUnavailable)."""
        return self._faults
