"""The bench's store server (bench/compare/store_server.py) and client (bench/compare/client.py).

The headline Hookline row reaches its job store over loopback through RemoteStore; these check that a call
answers what the in-memory store answers, that a refusal comes back as the same domain error with its
fields, and how the client deals jobs out to its threads.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.compare import client, store_server
from hookline.domain import constants
from hookline.domain.errors import NotFound, NotYet
from tests.support.jobs import scheduled_job

NOW_MS = 1_700_000_000_000


@pytest.fixture(scope="module")
def address() -> Iterator[store_server.Address]:
    """Yields the address of a store server process."""
    process, address = store_server.start(constants.LEASE_MS)
    yield address
    process.kill()
    process.join(timeout=10)


def test_given_a_stored_job_when_read_over_the_socket_then_it_is_the_job_and_the_call_is_metered(
    address: store_server.Address,
) -> None:
    jobs = store_server.RemoteStore(address, "jobs")
    job = scheduled_job(NOW_MS)

    stored, created = jobs.create(job, "hash", NOW_MS)

    assert created and stored == job
    assert jobs.get(job.tenant, job.job_id) == job
    assert store_server.RemoteStore(address, "meter").snapshot()["dynamodb_PutItem"] >= 1


def test_given_a_refusal_when_called_over_the_socket_then_the_same_domain_error_is_raised(
    address: store_server.Address,
) -> None:
    jobs = store_server.RemoteStore(address, "jobs")
    later = scheduled_job(NOW_MS, due_ms=NOW_MS + 60_000)
    jobs.create(later, "hash", NOW_MS)

    with pytest.raises(NotYet) as refused:
        jobs.claim(later.member(), NOW_MS)
    with pytest.raises(NotFound):
        jobs.get("bench", "no-such-job")

    assert refused.value.retry_at_ms == NOW_MS + 60_000  # a field __init__ takes, rebuilt on this side


def test_given_jobs_when_dealt_to_the_client_threads_then_each_job_is_one_call_or_in_one_batch() -> None:
    jobs: list[client.Job] = [(f"j{i}", None) for i in range(2 * client.BATCH + 3)]

    singles = client._shares(jobs, batch=False)
    batches = client._shares(jobs, batch=True)

    assert len(singles) == len(batches) == client.CLIENT_THREADS
    assert sorted(call[0] for calls in singles for call in calls) == sorted(jobs)
    assert all(len(call) == 1 for calls in singles for call in calls)
    assert sorted(job for calls in batches for call in calls for job in call) == sorted(jobs)
    assert max(len(call) for calls in batches for call in calls) == client.BATCH
