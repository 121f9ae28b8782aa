"""RQ 2 with `enqueue_at` for delayed jobs (its scheduler runs in the workers, `--with-scheduler`)."""

from __future__ import annotations

import os
from datetime import UTC, datetime

from redis import Redis
from rq import Queue

from bench.compare.post import post


class Peer:
    """RQ: 16 SimpleWorker processes (RQ runs one job at a time per worker; forking per job is slower)."""

    name = "rq"

    def __init__(self, redis_url: str) -> None:
        self._redis = Redis.from_url(redis_url)
        self._queue = Queue("bench", connection=self._redis)
        self._url = redis_url

    def worker_commands(self, python: str) -> list[list[str]]:
        """Returns 16 single-job workers, the first one running the scheduler for delayed jobs."""
        base = [
            python,
            "-m",
            "rq.cli",
            "worker",
            "bench",
            "--url",
            self._url,
            "--worker-class",
            "rq.worker.SimpleWorker",
            "--quiet",
        ]
        return [[*base, "--with-scheduler"] if i == 0 else base for i in range(16)]

    def close(self) -> None:
        """Closes the connection."""
        self._redis.close()


class Sender:
    """One client thread: enqueue per job, or enqueue_many (one pipeline: RQ's batch)."""

    def __init__(self, redis_url: str) -> None:
        self._redis = Redis.from_url(redis_url)
        self._queue = Queue("bench", connection=self._redis)

    def one(self, job_id: str, due_s: float | None) -> None:
        """Enqueues one job now, or at its due time (enqueue_at)."""
        if due_s is None:
            self._queue.enqueue(post, job_id)
        else:
            self._queue.enqueue_at(datetime.fromtimestamp(due_s, UTC), post, job_id)

    def many(self, jobs: list[tuple[str, float | None]]) -> None:
        """Enqueues jobs due now with one enqueue_many."""
        assert all(due_s is None for _, due_s in jobs), "the batch scenario's jobs are due now"
        self._queue.enqueue_many([Queue.prepare_data(post, (job_id,)) for job_id, _ in jobs])

    def close(self) -> None:
        """Closes the connection."""
        self._redis.close()


def open_sender(index: int) -> Sender:
    """Returns a client thread's sender, on a connection of its own."""
    return Sender(os.environ["BENCH_REDIS_URL"])
