"""Outcome counts gathered in memory and written to the statistics together, not one round trip per job.

Recording an outcome cost one Redis round trip of four commands per delivered job (HINCRBY outcome, lag
sum, lag count, EXPIRE), about half of the executor's Redis commands. The executor records into a
StatsBuffer instead, which adds up the outcomes per (tenant, minute, outcome) and hands them to the
recorder in one call (record_tallies) when flushed: every recover_every_ms while the executor runs, and
when its run or drain ends.

What this changes: statistics lag the outcomes by up to one flush interval, and an executor that dies
loses the counts it had not flushed (statistics are a view, best effort already: a Redis error drops a
count too). Nothing about the jobs depends on them: each outcome is in DynamoDB and acknowledged before it
is counted. A dead job with its id still goes to the recorder at once, since it also enters the tenant's
dead-letter set, which must name the job.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from hookline.domain.stats import BUCKET_MS, Outcome, Tally
from hookline.ports import StatsRecorder

_Key = tuple[str, int, Outcome]


class StatsBuffer:
    """A StatsRecorder that adds outcomes up until flush(); thread-safe."""

    def __init__(self, inner: StatsRecorder) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self._counts: dict[_Key, list[int]] = {}  # [count, lag sum, lag count]

    def record(
        self, tenant: str, outcome: Outcome, now_ms: int, job_id: str | None = None, lag_ms: int | None = None
    ) -> None:
        """Counts one outcome for the next flush; one that names a job goes to the recorder at once."""
        if job_id is not None:
            self._inner.record(tenant, outcome, now_ms, job_id, lag_ms)
            return
        key = (tenant, now_ms // BUCKET_MS, outcome)
        with self._lock:
            counts = self._counts.setdefault(key, [0, 0, 0])
            counts[0] += 1
            if lag_ms is not None:
                counts[1] += max(lag_ms, 0)
                counts[2] += 1

    def record_tallies(self, tallies: Sequence[Tally]) -> None:
        """Passes tallies on at once."""
        self._inner.record_tallies(tallies)

    def flush(self) -> int:
        """Writes every count gathered so far in one call; returns how many outcomes it held."""
        with self._lock:
            counts, self._counts = self._counts, {}
        if not counts:
            return 0
        tallies = [
            Tally(tenant, minute, outcome, count, lag_sum, lag_count)
            for (tenant, minute, outcome), (count, lag_sum, lag_count) in counts.items()
        ]
        self._inner.record_tallies(tallies)
        return sum(tally.count for tally in tallies)
