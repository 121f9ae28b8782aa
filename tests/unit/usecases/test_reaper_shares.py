"""Reaper on fakes with several shards: each shard gets its own share of a run, so one shard with a huge
backlog cannot keep the others from being re-delivered and reconciled in the same run.

Shard 0's live-index pages are slow (SLOW_PAGE_MS of the frozen clock each, one job a page): reconciling
what it lost takes far longer than a run. The other shards' pages take no time.
"""

from __future__ import annotations

from collections.abc import Callable

from hookline.domain.models import Job
from hookline.domain.reconcile import LiveJob
from hookline.usecases.reap import Reaper
from hookline.usecases.reconcile import JobReconciler
from tests.fakes.clock import FrozenClock
from tests.fakes.faults import redis_down
from tests.fakes.index import FakeIndex
from tests.fakes.jobs import FakeJobStore
from tests.unit.usecases.world import MAX_DELIVERIES, REDELIVER_AFTER_MS, World, member

SHARDS = 3
SLOW_SHARD = 0
SLOW_PAGE_MS = 10_000
RUN_MS = 60_000
# Jobs lost on SLOW_SHARD. A page reads one job from each of the shard's 8 live partitions (buckets), so a
# scan takes as many pages as its fullest bucket holds jobs: with 80, at least 10 (more than the 6 a run
# has time for), whatever buckets the jobs' random ids hash to. With 30 the fullest bucket held 6 or fewer
# in about half of the draws, and the slow shard's scan sometimes fit in one run.
SLOW_BACKLOG = 80
# Lost jobs fall due this soon after the crashed executor's entries turn idle: within the due scan's horizon.
DUE_AFTER_IDLE_S = REDELIVER_AFTER_MS / 1000 + 2


class SlowShardStore(FakeJobStore):
    """The world's jobs table; each live-index page of SLOW_SHARD takes SLOW_PAGE_MS; records page reads."""

    def __init__(self, world: World) -> None:
        super().__init__(world.tables)
        self._clock: FrozenClock = world.clock
        self.pages: list[int] = []  # the shard of each page read, in order

    def live_jobs(
        self, shard: int, cursor: str | None, limit: int, due_before_ms: int | None = None
    ) -> tuple[list[LiveJob], str | None]:
        """Reads a page, then lets SLOW_PAGE_MS pass when it was SLOW_SHARD's."""
        page = super().live_jobs(shard, cursor, limit, due_before_ms)
        self.pages.append(shard)
        if shard == SLOW_SHARD:
            self._clock.advance(SLOW_PAGE_MS)
        return page


def reaper(
    world: World,
    store: FakeJobStore,
    page: int = 1,
    sleep: Callable[[float], None] | None = None,
    redis: FakeIndex | None = None,
) -> Reaper:
    """Returns a reaper over every shard whose reconciler reads `page` live jobs at a time from store, its
    sleeps spending the frozen clock (or calling sleep), its Redis the world's (or redis)."""
    redis = redis or world.redis("reaper")
    return Reaper(
        store,
        redis,
        redis,
        world.clock,
        list(range(SHARDS)),
        world.metrics,
        redeliver_after_ms=REDELIVER_AFTER_MS,
        max_deliveries=MAX_DELIVERIES,
        jobs=JobReconciler(store, redis, redis, world.clock, page=page),
        sleep=sleep or world.sleep,
    )


def submit_on(world: World, shard: int, count: int, **fields: object) -> list[Job]:
    """Submits jobs until count of them landed on shard; returns those (others land elsewhere, harmlessly)."""
    on_shard: list[Job] = []
    while len(on_shard) < count:
        job = world.submit(**fields)
        if job.shard == shard:
            on_shard.append(job)
    return on_shard


def lose(world: World, jobs: list[Job]) -> None:
    """Takes the jobs out of Redis's due index (Redis lost them; its epochs survive)."""
    for job in jobs:
        assert world.index.unindex(job.member(), job.shard)


def indexed(world: World, job: Job) -> bool:
    """Tells whether Redis holds the job: waiting in the due index, or promoted (it fell due meanwhile)."""
    state = world.state(job.shard)
    return member(job) in state["due"] or member(job) in state["inflight"]


def test_given_a_shard_with_a_huge_backlog_when_reaped_then_the_other_shards_are_reaped_too() -> None:
    world = World(shards=SHARDS)
    reaper(world, world.store, page=100).run(world.clock.now_ms() + RUN_MS)  # first rebuilds: all settled
    crashed = {shard: submit_on(world, shard, 1)[0] for shard in (1, 2)}
    doomed = world.redis("doomed")
    for shard in range(SHARDS):
        doomed.ensure_group(shard)
    doomed.read_ready(list(range(SHARDS)), 100, 0)  # an executor that dies holding every ready entry
    lost = {
        shard: submit_on(world, shard, 1 if shard else SLOW_BACKLOG, delay_s=DUE_AFTER_IDLE_S)
        for shard in range(3)
    }
    lose(world, [job for jobs in lost.values() for job in jobs])
    world.clock.advance(REDELIVER_AFTER_MS)
    store = SlowShardStore(world)
    start = world.clock.now_ms()

    report = reaper(world, store).run(start + RUN_MS)

    assert report.reconcile_complete == {0: False, 1: True, 2: True}
    for shard in (1, 2):
        state = world.state(shard)
        assert state["pending"] == []
        assert member(crashed[shard]) in state["inflight"]
        assert {"m": member(crashed[shard]), "d": "1"} in state["ready"]  # delivered a second time
        assert indexed(world, lost[shard][0])
    # Shard 0 had a third of the run first (two pages), then, after the others, all that was left (four).
    slow_pages = [n for n, shard in enumerate(store.pages) if shard == SLOW_SHARD]
    assert len(slow_pages) == RUN_MS // SLOW_PAGE_MS
    assert slow_pages[:2] == [0, 1] and slow_pages[2] > 2
    assert set(store.pages[2 : slow_pages[2]]) == {1, 2}
    assert world.clock.now_ms() == start + RUN_MS


def test_given_a_shard_cut_short_when_reaped_again_then_it_goes_on_from_where_it_stopped() -> None:
    world = World(shards=SHARDS)
    reaper(world, world.store, page=100).run(world.clock.now_ms() + RUN_MS)
    lost = submit_on(world, SLOW_SHARD, SLOW_BACKLOG, delay_s=3_600)
    world.memory.flushall()  # every shard must be rebuilt: shard 0's rebuild outlasts a run
    slow = reaper(world, SlowShardStore(world))
    runs = []
    for _ in range(10):  # a scan that started over each run would never end
        runs.append(slow.run(world.clock.now_ms() + RUN_MS))
        if runs[-1].reconcile_complete[SLOW_SHARD]:
            break

    assert 1 < len(runs) < 10
    # Each run went on from the cursor the last one left: every live job (on any shard) was read once.
    live = len(world.tables.live)
    assert sum(run.live_seen for run in runs) == live
    assert sum(run.reindexed for run in runs) == live
    assert all(indexed(world, job) for job in lost)


def test_given_several_runs_when_reaped_then_each_starts_one_shard_further_on() -> None:
    world = World(shards=SHARDS)
    store = SlowShardStore(world)
    fast = reaper(world, store, page=100)
    firsts = []
    for _ in range(4):
        store.pages.clear()
        fast.run(world.clock.now_ms() + RUN_MS)
        firsts.append(store.pages[0])

    assert firsts == [0, 1, 2, 0]


class NodeDown(FakeIndex):
    """The reaper's Redis roles, with the node serving DOWN_SHARD refusing every command on it."""

    def ensure_group(self, shard: int) -> None:
        """Refuses DOWN_SHARD (as the real adapter does when its node is gone)."""
        if shard == DOWN_SHARD:
            raise redis_down()
        super().ensure_group(shard)


DOWN_SHARD = 1


def test_given_one_shards_node_down_for_the_whole_run_when_reaped_then_the_other_shards_are_reaped() -> None:
    world = World(shards=SHARDS)
    lost = {shard: submit_on(world, shard, 1, delay_s=1) for shard in range(SHARDS)}
    world.memory.flushall()  # every shard must be rebuilt
    start = world.clock.now_ms()
    down = reaper(world, world.store, redis=NodeDown(world.memory, "reaper", metrics=world.metrics))

    report = down.run(start + RUN_MS)

    assert report.reconcile_complete == {0: True, 1: False, 2: True}
    assert sorted(report.rebuilt) == [0, 2]
    assert indexed(world, lost[0][0]) and indexed(world, lost[2][0])
    assert not indexed(world, lost[DOWN_SHARD][0])
    assert world.clock.now_ms() == start + RUN_MS  # shard 1 was tried, backing off, until the deadline


def test_given_redis_flushed_while_watching_then_a_huge_shard_does_not_hold_up_the_others_rebuild() -> None:
    world = World(shards=SHARDS)
    reaper(world, world.store, page=100).run(world.clock.now_ms() + RUN_MS)  # first rebuilds: all settled
    later = {
        shard: submit_on(world, shard, 1 if shard else SLOW_BACKLOG, delay_s=3_600) for shard in range(SHARDS)
    }
    flushed: list[int] = []

    def sleep(seconds: float) -> None:
        if not flushed:
            world.memory.flushall()  # a fail-over to an empty replica, during the first interval
            flushed.append(world.clock.now_ms())
        world.sleep(seconds)

    slow = reaper(world, SlowShardStore(world), sleep=sleep)

    report = slow.watch(world.clock.now_ms() + RUN_MS)

    assert flushed
    assert sorted(report.rebuilt) == [1, 2]  # within the check that saw the flush
    assert report.reconcile_complete[SLOW_SHARD] is False
    assert indexed(world, later[1][0]) and indexed(world, later[2][0])
