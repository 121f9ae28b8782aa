"""A metrics sink (hookline.ports.MetricsSink) that remembers everything, for assertions."""

from __future__ import annotations

import threading
from collections import Counter


class RecordingMetrics:
    """Sums counters and keeps every timing and the last gauge value."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.timings: dict[str, list[float]] = {}
        self.gauges: dict[str, float] = {}

    def count(self, name: str, value: int = 1) -> None:
        """Adds value to the counter called name."""
        with self._lock:
            self.counts[name] += value

    def timing_ms(self, name: str, value_ms: float) -> None:
        """Records one duration."""
        with self._lock:
            self.timings.setdefault(name, []).append(value_ms)

    def gauge(self, name: str, value: float) -> None:
        """Records the current level."""
        with self._lock:
            self.gauges[name] = value
