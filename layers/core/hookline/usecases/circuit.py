"""A circuit for the Redis steps that have a fallback: once Redis failed, take the fallback at once.

Some Redis steps need not wait for Redis: the API's rate limiter admits when it cannot count, a job Redis
cannot index is noted for the reaper (usecases/indexing.py), a statistic is dropped. Redis's client tries
a failed command again for about half a second before it gives up, so with Redis down each such step
would wait that long, one after another: three per submit, 1.5 s, an outage turned into an API latency
incident. After a failure the circuit is open for open_ms and those steps take their fallback without
asking Redis; then the first step to ask goes to Redis again (the probe) while the others still fall back
until it answers: a success closes the circuit, a failure opens it for another open_ms. So with Redis
down at most one call per open_ms pays the client's retries, and once Redis answers again the fallbacks
stop within open_ms plus one call.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from hookline.domain.stats import Outcome, Tally
from hookline.ports import Clock, MetricsSink, StatsRecorder

logger = logging.getLogger(__name__)

# How long the fallbacks are taken without asking Redis after it failed: short, since jobs noted meanwhile
# wait for the reaper's next watch check (about a second) once Redis answers again.
REDIS_CIRCUIT_OPEN_MS = 1_000


class Circuit:
    """Tells the steps with a fallback whether to ask Redis now (thread-safe)."""

    def __init__(self, clock: Clock, metrics: MetricsSink, open_ms: int = REDIS_CIRCUIT_OPEN_MS) -> None:
        self._clock = clock
        self._metrics = metrics
        self._open_ms = open_ms
        self._lock = threading.Lock()
        self._failing_since_ms: int | None = None
        self._retry_at_ms = 0

    @property
    def is_open(self) -> bool:
        """Tells whether Redis failed and has not answered since (a probe may be due, or under way)."""
        return self._failing_since_ms is not None

    def allows(self) -> bool:
        """Tells whether to ask Redis now: always while it answers; once it failed, only the first caller
        after open_ms (the probe), which must then report succeeded() or failed()."""
        with self._lock:
            if self._failing_since_ms is None:
                return True
            now_ms = self._clock.now_ms()
            if now_ms < self._retry_at_ms:
                return False
            # The probe: the others keep falling back until it reports, or for another open_ms at most.
            self._retry_at_ms = now_ms + self._open_ms
            return True

    def failed(self) -> None:
        """Records that Redis did not answer: the fallbacks are taken for open_ms."""
        with self._lock:
            now_ms = self._clock.now_ms()
            opened = self._failing_since_ms is None
            if opened:
                self._failing_since_ms = now_ms
            self._retry_at_ms = now_ms + self._open_ms
        if opened:
            logger.warning("redis unavailable: its fallbacks are taken without asking it for a while")
            self._metrics.count("RedisCircuitOpened")

    def succeeded(self) -> None:
        """Records that Redis answered: the circuit closes."""
        with self._lock:
            since_ms, self._failing_since_ms = self._failing_since_ms, None
        if since_ms is not None:
            logger.warning("redis answers again", extra={"outage_ms": self._clock.now_ms() - since_ms})


class CircuitStats:
    """Records statistics while the circuit is closed, and drops them while it is open.

    Statistics are a view, never the record (RedisStats drops a count Redis fails): dropping it at once
    instead of after the client's retries loses nothing more. The recorder swallows Redis's errors, so it
    never probes: the steps that can tell success from failure do.
    """

    def __init__(self, stats: StatsRecorder, circuit: Circuit) -> None:
        self._stats = stats
        self._circuit = circuit

    def record(
        self, tenant: str, outcome: Outcome, now_ms: int, job_id: str | None = None, lag_ms: int | None = None
    ) -> None:
        """Counts one outcome unless Redis is known down."""
        if not self._circuit.is_open:
            self._stats.record(tenant, outcome, now_ms, job_id, lag_ms)

    def record_tallies(self, tallies: Sequence[Tally]) -> None:
        """Adds outcomes counted together unless Redis is known down."""
        if not self._circuit.is_open:
            self._stats.record_tallies(tallies)
