"""The metrics adapter: CloudWatch EMF through Powertools, with tenant-free dimensions only.

Recording is on the hot path (five metrics per delivered job), so values are aggregated in memory and handed
to Powertools once per invocation: a counter becomes one value (its sum), a gauge its last level, and each
timing is kept (EMF carries up to 100 values per metric and document; Powertools starts a new document then).
The handler's `@sink.log_metrics` publishes the aggregate just before Powertools flushes it as EMF.

Publishing timings: Powertools' add_metric formats the metric's whole value list (up to 100) into a debug
message on every call, whatever the log level, so adding each job's two timings one by one costs more at
publish than recording all of a job's metrics (docs/performance.md).
So each whole DOCUMENT_VALUES of a timing's values are serialised here, one document each, by Powertools'
serialize_metric_set (the same namespace, dimensions and metadata as its own documents), and only the
remainder (fewer than DOCUMENT_VALUES) goes through add_metric, into the document Powertools flushes with
the counters and gauges: an invocation with few jobs still makes one document holding everything.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

from aws_lambda_powertools import Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

Handler = TypeVar("Handler", bound=Callable[..., Any])

DOCUMENT_VALUES = 100  # EMF's bound on the values of one metric in one document


class PowertoolsMetrics:
    """Aggregates metrics in memory; publishes them into a Powertools Metrics object once per invocation."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics
        # Executor threads record concurrently: the lock guards only a dict update, not Powertools' work.
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._timings: dict[str, list[float]] = {}
        self._gauges: dict[str, float] = {}

    def count(self, name: str, value: int = 1) -> None:
        """Adds value to the counter called name."""
        if value:
            with self._lock:
                self._counts[name] = self._counts.get(name, 0) + value

    def timing_ms(self, name: str, value_ms: float) -> None:
        """Records one duration in milliseconds (a negative one, from clock skew, as 0)."""
        with self._lock:
            self._timings.setdefault(name, []).append(max(value_ms, 0))

    def gauge(self, name: str, value: float) -> None:
        """Records the current level of something (the last level recorded is published)."""
        with self._lock:
            self._gauges[name] = value

    def publish(self) -> None:
        """Hands everything recorded since the last publish to Powertools (to be flushed as EMF)."""
        with self._lock:
            counts, timings, gauges = self._counts, self._timings, self._gauges
            self._counts, self._timings, self._gauges = {}, {}, {}
        for name, total in counts.items():
            self._metrics.add_metric(name=name, unit=MetricUnit.Count, value=total)
        for name, values in timings.items():
            whole = len(values) - len(values) % DOCUMENT_VALUES
            for start in range(0, whole, DOCUMENT_VALUES):
                self._print_timings(name, values[start : start + DOCUMENT_VALUES])
            for value in values[whole:]:
                self._metrics.add_metric(name=name, unit=MetricUnit.Milliseconds, value=value)
        for name, level in gauges.items():
            self._metrics.add_metric(name=name, unit=MetricUnit.Count, value=level)

    def _print_timings(self, name: str, values: list[float]) -> None:
        """Prints one EMF document of a timing (DOCUMENT_VALUES values) as Powertools prints its own."""
        if is_metrics_disabled():
            return
        metric = {"Unit": MetricUnit.Milliseconds.value, "StorageResolution": 60, "Value": values}
        document = self._metrics.serialize_metric_set(metrics={name: metric})
        print(json.dumps(document, separators=(",", ":")))

    def log_metrics(self, handler: Handler) -> Handler:
        """Decorates a Lambda handler: publishes after it (also when it raises), then Powertools flushes."""

        @functools.wraps(handler)
        def publishing(*args: Any, **kwargs: Any) -> Any:
            try:
                return handler(*args, **kwargs)
            finally:
                self.publish()

        return cast(Handler, self._metrics.log_metrics(publishing))
