"""JobSubmitter on fakes: DynamoDB first, Redis second, and what each failing leaves behind."""

from __future__ import annotations

import pytest

from hookline.domain.errors import IdempotencyConflict, UnsafeUrl
from hookline.domain.models import JobRequest, JobStatus
from hookline.domain.stats import Outcome
from hookline.usecases.submit import INDEX_BATCH, INDEX_WAIT_MS, JobSubmitter
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


def test_given_a_batch_when_jobs_are_stored_then_indexed_together_at_its_end(world: World) -> None:
    with world.submitter().batch() as batch:
        now = batch.submit(TENANT, request()).job
        later = batch.submit(TENANT, request(delay_s=30)).job
        assert len(world.tables.jobs) == 2
        assert world.state() == idle_state()  # stored, not yet indexed

    assert world.state() == idle_state(
        ready=[entry(now.member())], inflight={member(now): T0}, due={member(later): T0 + 30_000}, wake=1
    )
    assert world.index.faults.calls("index_many") == 1


def test_given_a_batch_when_its_first_waiting_job_has_waited_long_enough_then_the_waiting_are_indexed(
    world: World,
) -> None:
    with world.submitter().batch() as batch:
        first = batch.submit(TENANT, request(delay_s=30)).job
        world.clock.advance(INDEX_WAIT_MS)
        second = batch.submit(TENANT, request(delay_s=30)).job
        assert world.state() == idle_state(
            due={member(first): T0 + 30_000, member(second): T0 + INDEX_WAIT_MS + 30_000}, wake=1
        )
        third = batch.submit(TENANT, request(delay_s=30)).job
        assert member(third) not in world.state()["due"]

    assert member(third) in world.state()["due"]
    assert world.index.faults.calls("index_many") == 2


def test_given_a_batch_when_index_batch_jobs_wait_then_they_are_indexed_without_waiting_for_its_end(
    world: World,
) -> None:
    with world.submitter().batch() as batch:
        jobs = [batch.submit(TENANT, request(delay_s=30)).job for _ in range(INDEX_BATCH)]
        assert len(world.state()["due"]) == INDEX_BATCH

    assert world.index.faults.calls("index_many") == 1
    assert set(world.state()["due"]) == {member(job) for job in jobs}


@pytest.mark.parametrize("fault", ["index_many", "index"], ids=["whole_call_fails", "fails_after_the_first"])
def test_given_a_batch_when_its_indexing_fails_then_every_job_is_noted_and_the_reaper_indexes_each_once(
    world: World, fault: str
) -> None:
    # "index": the fake's index_many runs index() per entry, so the second entry's failure leaves the first
    # applied, as a pipeline broken midway
    world.index.faults.fail(fault, on_call=2 if fault == "index" else 1)

    with world.submitter().batch() as batch:
        now = batch.submit(TENANT, request()).job
        later = batch.submit(TENANT, request(delay_s=30)).job

    assert world.metrics.counts["IndexFailed"] == 2
    noted = {job.member.job_id for note in world.unindexed.unindexed([0]) for job in note.jobs}
    assert noted == {now.job_id, later.job_id}
    world.reaper().run(T0 + 60_000)
    assert world.state() == idle_state(
        ready=[entry(now.member())], inflight={member(now): T0}, due={member(later): T0 + 30_000}, wake=1
    )


def test_given_create_reply_lost_when_the_client_repeats_it_then_created_once_and_indexed(
    world: World,
) -> None:
    world.store.replies.lose("put_item")

    job = world.submit(delay_s=30)

    assert world.store.replies.lost == 1
    assert list(world.tables.jobs) == [(TENANT, job.job_id)]
    assert world.state() == idle_state(due={member(job): T0 + 30_000}, wake=1)
