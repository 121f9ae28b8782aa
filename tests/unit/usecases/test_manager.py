"""JobManager on fakes: reads, cancel and replay, DynamoDB deciding and Redis following."""

from __future__ import annotations

import pytest

from hookline.domain.errors import Conflict, NotFound
from hookline.domain.models import ExecutionOutcome, JobStatus
from hookline.usecases.execute import Disposition
from tests.fakes.callbacks import response
from tests.unit.usecases.world import T0, TENANT, World, entry, idle_state, member


def test_given_job_when_read_then_the_owner_sees_it_and_its_attempts_and_others_get_not_found(
    world: World,
) -> None:
    world.callbacks.then(response(503))
    job = world.submit()
    world.drain()
    manager = world.manager()

    assert manager.get(TENANT, job.job_id) == world.job(job)
    assert [(e.attempt, e.outcome) for e in manager.executions(TENANT, job.job_id)] == [
        (1, ExecutionOutcome.RETRYABLE)
    ]
    for tenant, job_id in (("globex", job.job_id), (TENANT, "01KDVDNA00R4AD5CTDHKN47WVJ")):
        with pytest.raises(NotFound):
            manager.get(tenant, job_id)
        with pytest.raises(NotFound):
            manager.executions(tenant, job_id)


def test_given_job_waiting_when_cancelled_then_cancelled_and_taken_out_of_the_due_index(world: World) -> None:
    job = world.submit(delay_s=30)

    before = world.manager().cancel(TENANT, job.job_id)

    assert (before.status, world.job(job).status) == (JobStatus.CANCELLED, JobStatus.CANCELLED)
    assert world.state() == idle_state(wake=1)
    assert world.store.live_jobs(0, None, 10) == ([], None)


def test_given_redis_down_when_cancelling_then_cancelled_all_the_same(world: World) -> None:
    job = world.submit(delay_s=30)
    world.index.faults.fail_next("unindex")

    world.manager().cancel(TENANT, job.job_id)

    assert world.job(job).status is JobStatus.CANCELLED
    assert world.state() == idle_state(due={member(job): T0 + 30_000}, wake=1)  # dropped when it falls due
    world.clock.advance(30_000)
    world.promoter().tick()
    assert world.drain() == [Disposition.STALE]
    assert world.callbacks.requests == []


def test_given_running_job_when_cancelled_then_conflict_and_unchanged(world: World) -> None:
    job = world.submit()
    running = world.store.claim(job.member(), T0).job

    with pytest.raises(Conflict):
        world.manager().cancel(TENANT, job.job_id)
    assert world.job(job) == running


def test_given_dead_job_when_replayed_then_next_generation_ready_now(world: World) -> None:
    world.callbacks.then(response(404))
    job = world.submit()
    world.drain()
    world.clock.advance(5_000)

    replayed = world.manager().replay(TENANT, job.job_id)

    assert (replayed.status, replayed.generation, replayed.attempt_base, replayed.due_ms) == (
        JobStatus.SCHEDULED,
        2,
        1,
        T0 + 5_000,
    )
    assert world.state() == idle_state(
        ready=[entry(replayed.member())],
        inflight={member(replayed): T0 + 5_000},
        dead=[{"m": member(job), "reason": "status 404", "at": str(T0)}],
    )
    with pytest.raises(Conflict):
        world.manager().replay(TENANT, job.job_id)


def test_given_redis_down_when_replaying_then_replayed_and_indexed_by_reconciliation(world: World) -> None:
    world.callbacks.then(response(404))
    job = world.submit()
    world.drain()
    world.index.faults.fail_next("index")

    replayed = world.manager().replay(TENANT, job.job_id)

    assert world.job(job) == replayed
    assert world.metrics.counts["IndexFailed"] == 1
    assert world.reaper().run(T0 + 60_000).reindexed == 1
    assert entry(replayed.member()) in world.state()["ready"]


def test_given_several_dead_jobs_when_replayed_in_bulk_then_one_batch_and_more_reported(world: World) -> None:
    world.callbacks.then(*[response(404)] * 3)
    jobs = [world.submit() for _ in range(3)]
    world.drain()
    outcome = world.manager(replay_batch=2).replay_dead(TENANT, None)

    assert (len(outcome.replayed), outcome.failed, outcome.more) == (2, [], True)
    assert sorted(j.status for j in map(world.job, jobs)) == [
        JobStatus.DEAD,
        JobStatus.SCHEDULED,
        JobStatus.SCHEDULED,
    ]


def test_given_cancel_reply_lost_when_the_client_repeats_it_then_cancelled_not_conflict(world: World) -> None:
    job = world.submit(delay_s=30)
    world.store.replies.lose("update_item")

    cancelled = world.manager().cancel(TENANT, job.job_id)

    assert world.store.replies.lost == 1
    assert (cancelled.status, world.job(job).status) == (JobStatus.CANCELLED, JobStatus.CANCELLED)
    assert world.state() == idle_state(wake=1)


def test_given_replay_reply_lost_when_the_client_repeats_it_then_replayed_once_and_indexed(
    world: World,
) -> None:
    world.callbacks.then(response(404))
    job = world.submit()
    world.drain()
    world.store.replies.lose("update_item")

    replayed = world.manager().replay(TENANT, job.job_id)

    assert (replayed.status, replayed.generation) == (JobStatus.SCHEDULED, 2)
    assert world.job(job) == replayed
    assert world.state()["ready"] == [entry(replayed.member())]
