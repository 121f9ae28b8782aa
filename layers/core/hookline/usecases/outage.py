"""Waiting out a Redis blip inside a loop: back off 100 ms doubling to 500 ms, then carry on."""

from __future__ import annotations

import logging

from hookline.ports import Clock, MetricsSink

logger = logging.getLogger(__name__)

FIRST_DELAY_MS = 100
MAX_DELAY_MS = 500


class Outage:
    """Tracks one loop's current Redis outage: how long to wait next, and when it began (for the log).

    The cap is what bounds recovery: once Redis answers again, the loop's next try comes at most
    MAX_DELAY_MS later (the client's own reconnect retries are shorter still).
    """

    def __init__(self, clock: Clock, metrics: MetricsSink, loop: str) -> None:
        self._clock = clock
        self._metrics = metrics
        self._loop = loop
        self._delay_ms = FIRST_DELAY_MS
        self._since_ms: int | None = None

    def failed(self, error: Exception, deadline_ms: int) -> float:
        """Records a failed try; returns how long to wait (seconds), never past deadline_ms."""
        now_ms = self._clock.now_ms()
        if self._since_ms is None:
            self._since_ms = now_ms
            cause = error.__cause__ or error
            logger.warning("redis unavailable; %s loop backs off", self._loop, extra={"error": repr(cause)})
        self._metrics.count("IndexUnavailable")
        delay_ms = max(0, min(self._delay_ms, deadline_ms - now_ms))
        self._delay_ms = min(self._delay_ms * 2, MAX_DELAY_MS)
        return delay_ms / 1000

    def succeeded(self) -> None:
        """Ends the outage, if there was one (the next failure starts again at the first delay)."""
        if self._since_ms is not None:
            logger.warning(
                "redis answers again; %s loop resumed",
                self._loop,
                extra={"outage_ms": self._clock.now_ms() - self._since_ms},
            )
            self._since_ms = None
        self._delay_ms = FIRST_DELAY_MS
