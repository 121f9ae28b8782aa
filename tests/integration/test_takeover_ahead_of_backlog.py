"""A gone executor's deliveries are taken over ahead of a backlog of new entries in the ready stream.

The gone executor is a consumer that read entries and never came back; a backlog of jobs due at once then
fills the stream. A surviving executor must deliver the abandoned jobs among its first deliveries, not after
the backlog (re-adding them at the stream's tail would). Real redis-server, moto and a loopback receiver.
"""

from __future__ import annotations

import time

import pytest

from hookline.domain.models import JobRequest, JobStatus
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container
from tests.support.receiver import Receiver
from tests.support.stack import running_loops, wait_until

pytestmark = pytest.mark.integration

TENANT = "acme"
ABANDONED = 3
BACKLOG = 150


def test_given_abandoned_entries_behind_a_backlog_when_an_executor_reads_then_they_come_first(
    settings: Settings, receiver: Receiver, container: Container
) -> None:
    def submit(path: str) -> str:
        request = JobRequest.model_validate({"url": receiver.url(path), "body": "x"})
        return container.submitter.submit(TENANT, request).job.job_id

    gone = Container(settings, consumer="gone-executor")
    try:
        shards = list(range(settings.shards))
        for shard in shards:
            gone.index.ensure_group(shard)
        abandoned = [submit("/abandoned") for _ in range(ABANDONED)]
        held: list[str] = []

        def read_by_the_gone_one() -> bool:
            container.promoter.run(container.clock.now_ms() + 50)
            held.extend(e.member.job_id for e in gone.index.read_ready(shards, count=ABANDONED, block_ms=50))
            return len(held) == ABANDONED

        wait_until(read_by_the_gone_one, 5)  # pending under the gone executor, never to be finished by it
        backlog = [submit("/backlog") for _ in range(BACKLOG)]
        time.sleep(settings.redeliver_after_ms / 1000 + 0.2)  # the abandoned entries are idle by now

        with running_loops(container, max_runtime_s=60):
            wait_until(
                lambda: all(
                    container.jobs.get(TENANT, j).status is JobStatus.SUCCEEDED for j in abandoned + backlog
                ),
                50,
            )
    finally:
        gone.close()

    paths = [r.path for r in receiver.requests]
    first = paths.index("/abandoned")
    last = len(paths) - 1 - paths[::-1].index("/abandoned")
    assert paths.count("/abandoned") == ABANDONED
    # Served ahead of the backlog: within the first reads, far from the tail of 150 new entries.
    assert last < ABANDONED + 2 * settings.executor_concurrency, (first, last, len(paths))
