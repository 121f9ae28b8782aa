"""Dramatiq with its Redis broker; delayed jobs use `send_with_options(delay=ms)`."""

from __future__ import annotations

import os
import time

import dramatiq
from dramatiq.brokers.redis import RedisBroker

from bench.compare.post import post as deliver

broker = RedisBroker(url=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0"))
dramatiq.set_broker(broker)


@dramatiq.actor(max_retries=0, queue_name="bench")
def post(job_id: str) -> None:
    """Delivers one job."""
    deliver(job_id)


class Peer:
    """Dramatiq: 2 processes x 8 threads, worker timeout 100 ms (how often idle workers look for work)."""

    name = "dramatiq"

    def __init__(self, redis_url: str) -> None:
        self._redis_url = redis_url

    def worker_commands(self, python: str) -> list[list[str]]:
        """Returns one dramatiq command that forks two worker processes."""
        # dramatiq 2 reads the worker timeout from the environment (dramatiq_worker_timeout, in ms).
        return [
            [
                "env",
                "dramatiq_worker_timeout=100",
                python,
                "-m",
                "dramatiq",
                "bench.compare.peers.dramatiq_peer",
                "--processes",
                "2",
                "--threads",
                "8",
            ]
        ]

    def close(self) -> None:
        """Nothing to close."""


class Sender:
    """One client thread: send per job, or a group (Dramatiq's batch: it enqueues each message in turn)."""

    def one(self, job_id: str, due_s: float | None) -> None:
        """Enqueues one job now or with the delay until its due time."""
        if due_s is None:
            post.send(job_id)
        else:
            post.send_with_options(args=(job_id,), delay=max(0, int((due_s - time.time()) * 1000)))

    def many(self, jobs: list[tuple[str, float | None]]) -> None:
        """Enqueues jobs due now as one group."""
        assert all(due_s is None for _, due_s in jobs), "the batch scenario's jobs are due now"
        dramatiq.group(post.message(job_id) for job_id, _ in jobs).run()

    def close(self) -> None:
        """Nothing to close (the broker's pool is shared)."""


def open_sender(index: int) -> Sender:
    """Returns a client thread's sender (the broker is thread-safe)."""
    return Sender()
