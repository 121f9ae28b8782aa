"""JobReconciler on the shared fakes: the due scan reads only what can be overdue, keeps its cursor in the
rebuild marks across runs cut short by their deadline, and a lost epoch makes it read everything."""

from __future__ import annotations

from hookline.adapters.dynamo.tables import Keyspace
from hookline.domain.models import Job
from hookline.domain.reconcile import LiveJob
from hookline.usecases.reconcile import DUE_HORIZON_MS, DUE_SCAN, JobReconciler
from tests.fakes.clock import FrozenClock
from tests.fakes.jobs import FakeJobStore
from tests.unit.usecases.world import T0, World, member

PAGE_READ_MS = 100


class SlowStore(FakeJobStore):
    """The world's jobs table, each live-index page taking PAGE_READ_MS of the frozen clock."""

    def __init__(self, world: World) -> None:
        super().__init__(world.tables)
        self._clock: FrozenClock = world.clock

    def live_jobs(
        self, shard: int, cursor: str | None, limit: int, due_before_ms: int | None = None
    ) -> tuple[list[LiveJob], str | None]:
        """Reads a page, then lets PAGE_READ_MS pass."""
        page = super().live_jobs(shard, cursor, limit, due_before_ms)
        self._clock.advance(PAGE_READ_MS)
        return page


def reconciler(world: World, page: int = 1) -> JobReconciler:
    """Returns a reconciler over the world's tables (slow pages) and Redis, page jobs at a time."""
    redis = world.redis("reaper")
    return JobReconciler(SlowStore(world), redis, redis, world.clock, page=page)


def lose(world: World, *jobs: Job) -> None:
    """Takes the jobs out of Redis's due index (Redis lost them; its epoch survives)."""
    for job in jobs:
        assert world.index.unindex(job.member(), 0)


def settled(world: World) -> None:
    """Completes the first full rebuild of shard 0, so later runs are due scans."""
    result = reconciler(world, page=100).reconcile(0, world.clock.now_ms() + 60_000)
    assert (result.full, result.complete) == (True, True)


def test_given_jobs_lost_from_redis_when_scanned_then_only_those_that_can_be_overdue_are_read(
    world: World,
) -> None:
    settled(world)
    soon = [world.submit(delay_s=s) for s in (1, 2, DUE_HORIZON_MS / 1000)]
    later = [world.submit(delay_s=3_600) for _ in range(2)]
    lose(world, *soon, *later)

    result = reconciler(world, page=100).reconcile(0, world.clock.now_ms() + 60_000)

    assert (result.full, result.complete, result.seen, result.reindexed) == (False, True, 3, 3)
    assert set(world.state()["due"]) == {member(job) for job in soon}
    world.clock.advance(3_600_000)
    assert reconciler(world, page=100).reconcile(0, world.clock.now_ms() + 60_000).reindexed == 2


def test_given_scan_cut_short_by_its_deadline_then_the_next_run_goes_on_from_its_cursor(world: World) -> None:
    # One bucket: the shard's live jobs in one partition, so a page of one is one job (with more buckets a
    # page reads one of every partition; tests/contract/test_live_jobs.py covers that paging).
    world.tables.keyspace = Keyspace(1)
    settled(world)
    jobs = [world.submit(delay_s=1) for _ in range(5)]
    lose(world, *jobs)
    marks = world.redis("reaper")

    first = reconciler(world).reconcile(0, world.clock.now_ms() + 250)  # three pages of one job

    assert (first.complete, first.seen) == (False, 3)
    saved = marks.marks(0)
    assert saved.cursor_mode == DUE_SCAN and saved.cursor is not None
    second = reconciler(world).reconcile(0, world.clock.now_ms() + 60_000)
    assert (second.complete, second.seen, second.reindexed) == (True, 2, 2)
    assert marks.marks(0).cursor is None
    assert set(world.state()["due"]) == {member(job) for job in jobs}


def test_given_redis_lost_its_epoch_then_every_live_job_is_read_and_the_rebuild_recorded(
    world: World,
) -> None:
    settled(world)
    jobs = [world.submit(delay_s=3_600) for _ in range(3)]
    world.memory.flushall()

    result = reconciler(world, page=2).reconcile(0, T0 + 60_000)

    assert (result.full, result.complete, result.seen, result.reindexed) == (True, True, 3, 3)
    marks = world.redis("reaper").marks(0)
    assert marks.epoch is not None and not marks.lost
    assert set(world.state()["due"]) == {member(job) for job in jobs}
