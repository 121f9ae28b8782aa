"""Deadlines for the loops that run inside one Lambda invocation."""

from __future__ import annotations

from hookline.domain import constants
from hookline.ports import Clock, InvocationContext


def deadline_ms(
    clock: Clock, context: InvocationContext, reserve_ms: int = constants.INVOCATION_SAFETY_MARGIN_MS
) -> int:
    """Returns when a loop must stop taking new work: the invocation's end less reserve_ms."""
    return clock.now_ms() + max(0, context.get_remaining_time_in_millis() - reserve_ms)
