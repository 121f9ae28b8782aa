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

    def submit(self, jobs: list[tuple[str, float | None]]) -> None:
        """Enqueues jobs now or with the delay until their due time."""
        for job_id, due_s in jobs:
            if due_s is None:
                post.send(job_id)
            else:
                post.send_with_options(args=(job_id,), delay=max(0, int((due_s - time.time()) * 1000)))

    def close(self) -> None:
        """Nothing to close."""
