"""A launcher of executors (hookline.ports.ExecutorLauncher) that records what it was asked to start."""

from __future__ import annotations


class RecordingLauncher:
    """Starts nothing real: records each launch(count) and reports up to `accept` started per call."""

    def __init__(self, accept: int | None = None) -> None:
        self.requests: list[int] = []
        self.accept = accept  # None: every launch starts

    def launch(self, count: int) -> int:
        """Records the request; returns how many started (all, or at most `accept`)."""
        self.requests.append(count)
        return count if self.accept is None else min(count, self.accept)

    @property
    def started(self) -> int:
        """Returns how many executors were started in all."""
        return sum(count if self.accept is None else min(count, self.accept) for count in self.requests)
