"""Celery 5 with its Redis broker; delayed jobs use `apply_async(eta=...)`."""

from __future__ import annotations

import os
from datetime import UTC, datetime

from celery import Celery, group

from bench.compare.post import post as deliver

app = Celery("bench", broker=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0"))
app.conf.update(
    task_ignore_result=True,
    worker_prefetch_multiplier=4,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
)


@app.task(name="post")
def post(job_id: str) -> None:
    """Delivers one job."""
    deliver(job_id)


class Peer:
    """Celery: `celery worker -P threads -c 8`, two processes."""

    name = "celery"

    def __init__(self, redis_url: str) -> None:
        self._redis_url = redis_url
        app.conf.broker_url = redis_url

    def worker_commands(self, python: str) -> list[list[str]]:
        """Returns two worker processes of 8 threads."""
        command = [
            python,
            "-m",
            "celery",
            "-A",
            "bench.compare.peers.celery_peer",
            "worker",
            "-P",
            "threads",
            "-c",
            "8",
            "--without-heartbeat",
            "--without-gossip",
            "--without-mingle",
            "-l",
            "WARNING",
        ]
        return [[*command, "-n", f"w{i}@bench"] for i in range(2)]

    def close(self) -> None:
        """Nothing to close."""


def _options(due_s: float | None) -> dict[str, datetime]:
    return {} if due_s is None else {"eta": datetime.fromtimestamp(due_s, UTC)}


class Sender:
    """One client thread: apply_async per job, or a group of signatures (Celery's batch)."""

    def one(self, job_id: str, due_s: float | None) -> None:
        """Enqueues one job now or at its due time (eta)."""
        post.apply_async((job_id,), **_options(due_s))

    def many(self, jobs: list[tuple[str, float | None]]) -> None:
        """Enqueues jobs due now as one group."""
        assert all(due_s is None for _, due_s in jobs), "the batch scenario's jobs are due now"
        group(post.s(job_id) for job_id, _ in jobs).apply_async()

    def close(self) -> None:
        """Nothing to close (the app's producer pool is shared)."""


def open_sender(index: int) -> Sender:
    """Returns a client thread's sender (the app's client is thread-safe)."""
    return Sender()
