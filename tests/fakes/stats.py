"""A statistics recorder that keeps every call, for the use cases' tests."""

from __future__ import annotations

from collections.abc import Sequence

from hookline.domain.stats import Outcome, Tally


class RecordingStats:
    """A StatsRecorder that keeps every call."""

    def __init__(self) -> None:
        self.records: list[tuple[str, Outcome, int, str | None, int | None]] = []
        self.tallies: list[list[Tally]] = []

    def record(
        self, tenant: str, outcome: Outcome, now_ms: int, job_id: str | None = None, lag_ms: int | None = None
    ) -> None:
        self.records.append((tenant, outcome, now_ms, job_id, lag_ms))

    def record_tallies(self, tallies: Sequence[Tally]) -> None:
        self.tallies.append(list(tallies))
