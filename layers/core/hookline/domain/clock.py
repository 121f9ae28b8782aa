"""Clocks: the one place that reads wall time, so the core can be driven by a frozen clock.

Both implement hookline.ports.Clock.
"""

import time


class SystemClock:
    """Reads the host's wall clock."""

    def now_ms(self) -> int:
        """Returns milliseconds since the Unix epoch."""
        return time.time_ns() // 1_000_000


class FrozenClock:
    """Stands still until advanced; for tests and simulations."""

    def __init__(self, now_ms: int) -> None:
        self._now_ms = now_ms

    def now_ms(self) -> int:
        """Returns the frozen time."""
        return self._now_ms

    def advance(self, delta_ms: int) -> None:
        """Moves the clock forward by delta_ms."""
        self._now_ms += delta_ms

    def set(self, now_ms: int) -> None:
        """Jumps to now_ms."""
        self._now_ms = now_ms
