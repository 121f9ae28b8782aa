"""What the queue routes return: the shared models (hookline_client.schemas) built from queues."""

from __future__ import annotations

from hookline.api.views import rfc3339
from hookline.domain.queues import Queue, QueueFigures
from hookline_client.schemas import QueueFiguresView, QueueListView, QueueView

__all__ = ["QueueFiguresView", "QueueListView", "QueueView", "queue_view"]


def _s(ms: int | None) -> float | None:
    return None if ms is None else ms / 1000


def queue_view(queue: Queue, figures: QueueFigures | None = None) -> QueueView:
    """Returns the view of a queue, with its live figures when given."""
    rate = {"limit": queue.rate_limit, "period_s": queue.rate_period_ms / 1000} if queue.rate_limit else None
    return QueueView(
        name=queue.name,
        rate_limit=rate,
        max_concurrency=queue.max_concurrency or None,
        max_attempts=queue.max_attempts,
        min_backoff_s=_s(queue.min_backoff_ms),
        max_backoff_s=_s(queue.max_backoff_ms),
        timeout_s=_s(queue.timeout_ms),
        paused=queue.paused,
        paused_since=rfc3339(queue.paused_since_ms) if queue.paused else None,
        version=queue.version,
        created_at=rfc3339(queue.created_ms),
        updated_at=rfc3339(queue.updated_ms),
        figures=None
        if figures is None
        else QueueFiguresView(
            waiting=figures.parked + figures.waiting_for_turn,
            in_flight=figures.in_flight,
            in_rate_window=figures.in_window,
        ),
    )
