"""The metrics adapter: CloudWatch EMF through Powertools, with tenant-free dimensions only."""

from __future__ import annotations

import threading

from aws_lambda_powertools import Metrics
from aws_lambda_powertools.metrics import MetricUnit


class PowertoolsMetrics:
    """Records into a Powertools Metrics object; flushed as EMF by the handler's log_metrics decorator."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics
        # Executor threads record concurrently; Powertools' metric set is a plain dict.
        self._lock = threading.Lock()

    def count(self, name: str, value: int = 1) -> None:
        """Adds value to the counter called name."""
        if value:
            with self._lock:
                self._metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)

    def timing_ms(self, name: str, value_ms: float) -> None:
        """Records one duration in milliseconds."""
        with self._lock:
            self._metrics.add_metric(name=name, unit=MetricUnit.Milliseconds, value=max(value_ms, 0))

    def gauge(self, name: str, value: float) -> None:
        """Records the current level of something."""
        with self._lock:
            self._metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
