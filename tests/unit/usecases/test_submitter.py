"""JobSubmitter on fakes: DynamoDB first, Redis second, and what each failing leaves behind."""

from __future__ import annotations

import pytest

from hookline.domain.errors import IdempotencyConflict, UnsafeUrl
from hookline.domain.models import JobRequest, JobStatus
from hookline.domain.stats import Outcome
from hookline.usecases.submit import JobSubmitter
from tests.fakes.faults import DynamoUnavailable
from tests.fakes.stats import RecordingStats
from tests.unit.usecases.world import T0, TENANT, URL, World, entry, idle_state, member


def request(**fields: object) -> JobRequest:
    """Returns a job request to URL."""
    return JobRequest.model_validate({"url": URL, "body": "hi", **fields})


def test_given_job_due_now_when_submitted_then_stored_first_and_put_on_the_ready_stream(world: World) -> None:
    result = world.submitter().submit(TENANT, request())

    job = result.job
    assert result.created
    assert world.job(job) == job
    assert (job.status, job.generation, job.attempt, job.due_ms) == (JobStatus.SCHEDULED, 1, 0, T0)
    assert world.state() == idle_state(ready=[entry(job.member())], inflight={member(job): T0})
    assert world.metrics.counts["Submitted"] == 1


def test_given_job_due_later_when_submitted_then_in_due_index_with_a_wake(world: World) -> None:
    job = world.submitter().submit(TENANT, request(delay_s=30)).job

    assert world.state() == idle_state(due={member(job): T0 + 30_000}, wake=1)


def test_given_idempotency_key_when_resubmitted_then_same_job_indexed_once_and_conflict_if_changed(
    world: World,
) -> None:
    submitter = world.submitter()
    first = submitter.submit(TENANT, request(idempotency_key="k", delay_s=30))

    again = submitter.submit(TENANT, request(idempotency_key="k", delay_s=30))
    with pytest.raises(IdempotencyConflict):
        submitter.submit(TENANT, request(idempotency_key="k", delay_s=31))

    assert (again.job, again.created) == (first.job, False)
    assert list(world.tables.jobs) == [(TENANT, first.job.job_id)]
    assert world.state() == idle_state(due={member(first.job): T0 + 30_000}, wake=1)
    assert world.metrics.counts["Submitted"] == 1


def test_given_redis_down_when_submitted_then_stored_unindexed_and_reconciliation_indexes_it(
    world: World,
) -> None:
    world.index.faults.fail_next("index")

    result = world.submitter().submit(TENANT, request(delay_s=30))

    assert result.created
    assert world.job(result.job).status is JobStatus.SCHEDULED
    assert world.state() == idle_state()
    assert world.metrics.counts["IndexFailed"] == 1
    assert world.reaper().run(T0 + 60_000).reindexed == 1
    assert world.state() == idle_state(due={member(result.job): T0 + 30_000}, wake=1)


def test_given_index_reply_lost_after_it_was_applied_then_reconciliation_adds_nothing(world: World) -> None:
    world.index.faults.fail_next("index", after=True)

    job = world.submitter().submit(TENANT, request()).job

    assert world.metrics.counts["IndexFailed"] == 1
    assert world.reaper().run(T0 + 60_000).reindexed == 0
    assert world.state() == idle_state(ready=[entry(job.member())], inflight={member(job): T0})


def test_given_first_index_failed_when_idempotent_repeat_then_not_indexed_until_reconciliation(
    world: World,
) -> None:
    submitter = world.submitter()
    world.index.faults.fail_next("index")
    first = submitter.submit(TENANT, request(idempotency_key="k")).job

    repeat = submitter.submit(TENANT, request(idempotency_key="k"))

    assert (repeat.job, repeat.created) == (first, False)
    assert world.state() == idle_state()  # a repeat does not index: the reaper is what heals the first
    world.reap()
    assert world.state() == idle_state(ready=[entry(first.member())], inflight={member(first): T0})


def test_given_dynamodb_down_when_submitted_then_error_and_nothing_indexed(world: World) -> None:
    world.store.faults.fail_next("create")

    with pytest.raises(DynamoUnavailable):
        world.submitter().submit(TENANT, request())

    assert world.tables.jobs == {}
    assert world.state() == idle_state()


def test_given_unsafe_url_when_submitted_then_refused_before_anything_is_written(world: World) -> None:
    def refuse(url: str) -> None:
        raise UnsafeUrl(f"{url} resolves to a private address")

    submitter = JobSubmitter(world.store, world.index, world.clock, refuse, 1, world.metrics)

    with pytest.raises(UnsafeUrl):
        submitter.submit(TENANT, request())

    assert world.tables.jobs == {}
    assert world.state() == idle_state()


def test_given_a_batch_when_jobs_are_submitted_then_counted_together_at_its_end_even_if_it_fails(
    world: World,
) -> None:
    stats = RecordingStats()
    submitter = JobSubmitter(
        world.store, world.index, world.clock, lambda url: None, world.shards, world.metrics, stats=stats
    )

    with pytest.raises(UnsafeUrl), submitter.batch() as batch:
        batch.submit(TENANT, request())
        batch.submit(TENANT, request(delay_s=30))
        assert stats.records == stats.tallies == []  # nothing written while the batch runs
        raise UnsafeUrl("a later item's failure ends the request", field="url")

    assert stats.records == []
    assert [(t.tenant, t.outcome, t.count) for tallies in stats.tallies for t in tallies] == [
        (TENANT, Outcome.SUBMITTED, 2)
    ]
    assert len(world.tables.jobs) == 2
