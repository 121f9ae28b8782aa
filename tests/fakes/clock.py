"""A clock that stands still until a test moves it; implements hookline.ports.Clock."""


class FrozenClock:
    """Stands still until advanced or set."""

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
