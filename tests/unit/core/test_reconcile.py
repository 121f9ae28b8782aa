"""JobReconciler: scans bounded by the deadline that go on where the last run stopped, and full rebuilds."""

from __future__ import annotations

from collections.abc import Sequence

from hookline.domain.models import FlowControl, JobStatus, Member
from hookline.domain.reconcile import LiveJob, RebuildMarks
from hookline.usecases.reconcile import DUE_HORIZON_MS, JobReconciler
from tests.fakes.clock import FrozenClock

NOW_MS = 1_000_000
PAGE_MS = 100  # each page read takes this long on the frozen clock


def job(n: int, due_ms: int) -> LiveJob:
    return LiveJob("t", f"job{n:04d}", JobStatus.SCHEDULED, 1, due_ms, 0, FlowControl())


class FakeStore:
    """The live index of one shard, ordered by due time, paged like DynamoDB (cursor: the last item read)."""

    def __init__(self, clock: FrozenClock, jobs: list[LiveJob]) -> None:
        self.clock = clock
        self.jobs = sorted(jobs, key=lambda j: (j.due_ms, j.job_id))
        self.read: list[str] = []

    def live_jobs(
        self, shard: int, cursor: str | None, limit: int, due_before_ms: int | None = None
    ) -> tuple[list[LiveJob], str | None]:
        self.clock.advance(PAGE_MS)
        start = 0 if cursor is None else int(cursor) + 1
        in_range = [j for j in self.jobs if due_before_ms is None or j.due_ms <= due_before_ms]
        page = in_range[start : start + limit]
        self.read += [j.job_id for j in page]
        more = start + limit < len(in_range)
        return page, str(start + len(page) - 1) if more else None


class FakeIndex:
    """The due and in-flight indexes, as the set of members they hold."""

    def __init__(self, held: set[str]) -> None:
        self.held = held
        self.indexed: list[str] = []

    def indexed_members(
        self, shard: int, members: Sequence[Member], stale_before_ms: int | None = None
    ) -> list[bool]:
        return [m.job_id in self.held for m in members]

    def index(self, member: Member, shard: int, due_ms: int, now_ms: int, new_member: bool = False) -> bool:
        self.held.add(member.job_id)
        self.indexed.append(member.job_id)
        return due_ms <= now_ms


class FakeMarks:
    """One shard's rebuild marks, as Redis would keep them."""

    def __init__(self, epoch: str | None, rebuilt: str | None) -> None:
        self.current = RebuildMarks(epoch, rebuilt)

    def marks(self, shard: int) -> RebuildMarks:
        return self.current

    def start_epoch(self, shard: int) -> str:
        if self.current.epoch is None:
            self.current = RebuildMarks("new", self.current.rebuilt)
        return "new" if self.current.epoch is None else self.current.epoch

    def save_cursor(self, shard: int, mode: str, cursor: str | None) -> None:
        self.current = RebuildMarks(self.current.epoch, self.current.rebuilt, mode, cursor)

    def finish_rebuild(self, shard: int, epoch: str) -> None:
        self.current = RebuildMarks(self.current.epoch, epoch, self.current.cursor_mode, self.current.cursor)


def reconciler(store: FakeStore, index: FakeIndex, marks: FakeMarks, clock: FrozenClock) -> JobReconciler:
    return JobReconciler(store, index, marks, clock, page=3)  # type: ignore[arg-type]


def test_given_backlog_longer_than_a_run_when_reconciling_then_runs_go_on_and_reach_the_near_due_job() -> (
    None
):
    clock = FrozenClock(NOW_MS)
    backlog = [job(n, NOW_MS - 60_000 + n) for n in range(30)]  # overdue, all held (in the ready stream)
    lost = job(999, NOW_MS + DUE_HORIZON_MS - 1)  # near-due, last in the index, lost from Redis
    store = FakeStore(clock, [*backlog, lost])
    index = FakeIndex({j.job_id for j in backlog})
    marks = FakeMarks("e1", "e1")
    runs = []

    for _ in range(5):
        result = reconciler(store, index, marks, clock).reconcile(0, clock.now_ms() + 3 * PAGE_MS)
        runs.append((result.seen, result.reindexed, result.complete, result.full))

    # Three pages of three a run: the fourth run reaches the lost job (restarting at page one each run, no
    # run ever would), then the scan wraps around to the most overdue.
    cut, reached = (9, 0, False, False), (4, 1, True, False)
    assert runs == [cut, cut, cut, reached, cut]
    assert index.indexed == [lost.job_id]
    assert store.read[-9:] == [j.job_id for j in backlog[:9]]


def test_given_redis_lost_state_when_reconciling_then_every_live_job_is_read_and_rebuild_recorded() -> None:
    clock = FrozenClock(NOW_MS)
    jobs = [job(1, NOW_MS - 1_000), job(2, NOW_MS + 3_600_000), job(3, NOW_MS + 86_400_000)]
    store = FakeStore(clock, jobs)
    index = FakeIndex(set())
    marks = FakeMarks(None, "old")  # a flush: no epoch at all

    first = reconciler(store, index, marks, clock).reconcile(0, clock.now_ms() + 10 * PAGE_MS)
    second = reconciler(store, index, marks, clock).reconcile(0, clock.now_ms() + 10 * PAGE_MS)

    assert (first.seen, first.reindexed, first.complete, first.full) == (3, 3, True, True)
    assert marks.current.rebuilt == marks.current.epoch == "new"
    assert (second.seen, second.full) == (1, False)  # then only what can be overdue
