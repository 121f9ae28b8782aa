"""Per-tenant statistics: what is counted, and the values the use cases report.

The port is hookline.ports.StatsRecorder; the Redis adapter is adapters/redis/stats.py.

They are kept in Redis so that reading them never scans the jobs table.

Two structures per tenant, both under the tenant's own hash tag:

- one HASH per minute (`redis_keys.stats_bucket_key`) with a counter per outcome and the sum and count of
  fire lags, incremented where the outcome is recorded (after DynamoDB holds it) and expiring after two
  hours: reading the last hour is 60 HGETALLs in one round trip;
- a ZSET of the tenant's dead job ids scored by their record's expiry, added when a job is dead-lettered and
  removed when it is replayed: the dead-letter count is one ZCOUNT over the unexpired ones.

Recording is best effort: a Redis error is logged, never raised, so statistics cannot fail a delivery or a
request. Accuracy is documented in docs/operating.md ("Statistics").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

BUCKET_MS = 60_000
WINDOW_MINUTES = 60
# Longer than the window read, so a bucket being read is never one that expired a moment ago.
BUCKET_TTL_S = 2 * 3600
LAG_SUM = "lag_ms_sum"
LAG_COUNT = "lag_n"


class Outcome(StrEnum):
    """What is counted per minute: a job accepted, an attempt's end, or an operator's action."""

    SUBMITTED = "submitted"
    SUCCEEDED = "succeeded"
    RETRIED = "retried"  # an attempt failed and another is scheduled
    DEAD = "dead"
    CANCELLED = "cancelled"
    REPLAYED = "replayed"


@dataclass(frozen=True)
class Tally:
    """Outcomes of one kind counted together for a tenant's minute, to be added in one write."""

    tenant: str
    minute: int  # now_ms // BUCKET_MS of the outcomes
    outcome: Outcome
    count: int
    lag_ms_sum: int = 0
    lag_count: int = 0


@dataclass(frozen=True)
class MinuteStats:
    """One minute's counters for a tenant."""

    start_ms: int
    counts: dict[Outcome, int]
    lag_ms_sum: int = 0
    lag_count: int = 0

    @property
    def finished_attempts(self) -> int:
        """Attempts that ended in the minute: succeeded, retried or dead."""
        return sum(self.counts[o] for o in (Outcome.SUCCEEDED, Outcome.RETRIED, Outcome.DEAD))


@dataclass(frozen=True)
class TenantStats:
    """What GET /v1/stats reports: the last hour per minute, the dead-letter count and the backlog."""

    minutes: list[MinuteStats]
    dead_letters: int
    ready_backlog: int
    due_backlog: int
    totals: dict[Outcome, int] = field(default_factory=dict)


def success_rate(succeeded: int, finished: int) -> float | None:
    """Returns succeeded / finished attempts, or None when no attempt finished."""
    return None if finished == 0 else round(succeeded / finished, 4)
