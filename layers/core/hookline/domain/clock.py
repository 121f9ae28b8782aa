"""The wall clock: the one place that reads wall time; the core takes any hookline.ports.Clock."""

import time


class SystemClock:
    """Reads the host's wall clock."""

    def now_ms(self) -> int:
        """Returns milliseconds since the Unix epoch."""
        return time.time_ns() // 1_000_000
