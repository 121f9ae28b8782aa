"""A scheduled job as a plain submit stores it, for tests and benches that build jobs without the API."""

from __future__ import annotations

from typing import Any

from hookline.domain.ids import new_id
from hookline.domain.models import Job, JobStatus


def scheduled_job(now_ms: int, **fields: Any) -> Job:
    """Returns a new job, scheduled and due at now_ms, first generation, no attempt yet (not stored).

    Every field a caller names replaces the default: tenant "bench", a fresh id, a JSON POST to a loopback
    port nothing listens on, 3 attempts with backoff from 1 s to 60 s, a 5 s timeout, shard 0.
    """
    values: dict[str, Any] = {
        "tenant": "bench",
        "job_id": new_id(now_ms),
        "status": JobStatus.SCHEDULED,
        "generation": 1,
        "attempt": 0,
        "max_attempts": 3,
        "url": "http://127.0.0.1:9/hook",
        "method": "POST",
        "headers": {"Content-Type": "application/json"},
        "body": '{"n": 1}',
        "due_ms": now_ms,
        "created_ms": now_ms,
        "updated_ms": now_ms,
        "min_backoff_ms": 1_000,
        "max_backoff_ms": 60_000,
        "timeout_ms": 5_000,
        "shard": 0,
    }
    return Job(**{**values, **fields})
