"""JobManager.run_now on fakes: a waiting job due now in the next generation, its attempts unchanged, and
delivered once whatever its earlier entry does; DynamoDB deciding and Redis following."""

from __future__ import annotations

import pytest

from hookline.domain.errors import NotFound, NotWaiting, StaleState
from hookline.domain.models import JobStatus
from hookline.usecases.execute import Disposition
from tests.fakes.callbacks import response
from tests.unit.usecases.world import T0, TENANT, World, entry, idle_state, member


def test_given_a_job_due_later_when_run_now_then_ready_now_and_its_old_entry_dropped_when_it_falls_due(
    world: World,
) -> None:
    job = world.submit(delay_s=30)

    moved = world.manager().run_now(TENANT, job.job_id)

    assert (moved.generation, moved.due_ms, moved.attempt, moved.max_attempts) == (
        2,
        T0,
        0,
        job.max_attempts,
    )
    assert world.state() == idle_state(
        due={member(job): T0 + 30_000}, ready=[entry(moved.member())], inflight={member(moved): T0}, wake=1
    )
    assert world.drain() == [Disposition.SUCCEEDED]
    world.clock.advance(30_000)
    world.promoter().tick()
    assert world.drain() == [Disposition.STALE]  # the earlier generation, promoted at its time: dropped
    assert len(world.callbacks.requests) == 1


def test_given_redis_down_when_running_now_then_moved_and_indexed_by_reconciliation(world: World) -> None:
    job = world.submit(delay_s=30)
    world.index.faults.fail_next("index")

    moved = world.manager().run_now(TENANT, job.job_id)

    assert world.job(job) == moved
    assert world.metrics.counts["IndexFailed"] == 1
    assert world.reaper().run(T0 + 1_000).reindexed == 1
    assert entry(moved.member()) in world.state()["ready"]


def test_given_the_reply_lost_when_the_client_repeats_it_then_moved_one_generation_only(world: World) -> None:
    job = world.submit(delay_s=30)
    world.store.replies.lose("update_item")

    moved = world.manager().run_now(TENANT, job.job_id)

    assert world.store.replies.lost == 1
    assert (moved.generation, world.job(job).generation) == (2, 2)
    assert world.state()["ready"] == [entry(moved.member())]


def test_given_a_job_not_waiting_when_run_now_then_not_waiting_or_not_found_and_unchanged(
    world: World,
) -> None:
    world.callbacks.then(response(404))
    dead = world.submit()
    world.drain()

    with pytest.raises(NotWaiting) as refused:
        world.manager().run_now(TENANT, dead.job_id)
    with pytest.raises(NotFound):
        world.manager().run_now("someone-else", dead.job_id)
    assert (refused.value.http_status, refused.value.code) == (409, "job_not_waiting")
    assert world.job(dead).status is JobStatus.DEAD


def test_given_an_executor_claims_it_between_the_read_and_the_write_then_not_waiting_and_delivered_once(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = world.submit()  # due now: queued on the ready stream
    manager = world.manager()
    read = world.store.get

    def read_then_deliver(tenant: str, job_id: str) -> object:
        found = read(tenant, job_id)
        monkeypatch.setattr(world.store, "get", read)
        assert world.drain() == [Disposition.SUCCEEDED]  # the queued entry is claimed and delivered now
        return found

    monkeypatch.setattr(world.store, "get", read_then_deliver)

    with pytest.raises(NotWaiting):
        manager.run_now(TENANT, job.job_id)
    assert (world.job(job).status, world.job(job).generation) == (JobStatus.SUCCEEDED, 1)
    assert world.drain() == []
    assert len(world.callbacks.requests) == 1


def test_given_another_run_now_between_the_read_and_the_write_then_stale_state_and_one_generation_on(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = world.submit(delay_s=30)
    manager = world.manager()
    read = world.store.get

    def read_then_move(tenant: str, job_id: str) -> object:
        found = read(tenant, job_id)
        monkeypatch.setattr(world.store, "get", read)
        world.manager().run_now(tenant, job_id)  # the other call wins the race
        return found

    monkeypatch.setattr(world.store, "get", read_then_move)

    with pytest.raises(StaleState):
        manager.run_now(TENANT, job.job_id)
    assert world.job(job).generation == 2
    assert world.drain() == [Disposition.SUCCEEDED]
    assert len(world.callbacks.requests) == 1
