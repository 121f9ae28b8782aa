"""Deadlines for the loops that run inside one Lambda invocation."""

from __future__ import annotations

from typing import Protocol

from hookline.domain import constants
from hookline.domain.clock import Clock


class InvocationContext(Protocol):
    """The part of a Lambda context the loops need."""

    def get_remaining_time_in_millis(self) -> int:
        """Returns how long the invocation may still run."""
        ...


def deadline_ms(
    clock: Clock, context: InvocationContext, reserve_ms: int = constants.INVOCATION_SAFETY_MARGIN_MS
) -> int:
    """Returns when a loop must stop taking new work: the invocation's end less reserve_ms."""
    return clock.now_ms() + max(0, context.get_remaining_time_in_millis() - reserve_ms)
