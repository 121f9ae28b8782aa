"""Fan-out on fakes: executors launched for the ready streams' unread backlog, sized to it, bounded per check,
counted in the ledger every promoter shares, and never more running than the ceiling.

The backlog is entries added to the shards' ready streams that no consumer has read; the launcher records
what it was asked to start; the clock is frozen and moved by the tests.
"""

from __future__ import annotations

from collections.abc import Callable

from hookline.adapters.redis import keys as redis_keys
from hookline.usecases.scale import ExecutorScaler, FanOutPolicy
from tests.fakes.index import FakeIndex
from tests.fakes.launcher import RecordingLauncher
from tests.unit.usecases.world import World

PER_EXECUTOR = 10
POLICY = FanOutPolicy(
    backlog_per_executor=PER_EXECUTOR,
    max_executors=25,
    max_launch_per_check=10,
    check_interval_ms=1_000,
    start_ms=5_000,
    executor_run_ms=60_000,
)


def scaler(world: World, launcher: RecordingLauncher, name: str = "promoter") -> ExecutorScaler:
    """Returns a promoter's scaler over both shards of the world's Redis."""
    redis: FakeIndex = world.redis(name)
    return ExecutorScaler(redis, world.clock, [0, 1], launcher, world.metrics, redis, POLICY)


def backlog(world: World, shard: int, entries: int) -> None:
    """Adds entries no executor has read to a shard's ready stream."""
    for n in range(entries):
        world.memory.add_entry(redis_keys.ready_stream(shard), {"m": f"acme/job{shard}-{n}/1", "d": "0"})


def checks(world: World, fan_out: ExecutorScaler, count: int) -> list[int]:
    """Checks count times, a check interval apart; returns what each started."""
    started = []
    for _ in range(count):
        started.append(fan_out.check())
        world.clock.advance(POLICY.check_interval_ms)
    return started


def running(world: World) -> int:
    """Returns the executors the ledger counts as running."""
    return len(world.memory.zset(redis_keys.fan_out_key()))


def test_given_backlog_below_one_executors_worth_when_checking_then_nothing_is_launched(world: World) -> None:
    backlog(world, 0, 5)
    backlog(world, 1, 4)
    launcher = RecordingLauncher()

    assert scaler(world, launcher).check() == 0
    assert launcher.requests == []
    assert running(world) == 0


def test_given_backlog_when_checking_then_one_executor_per_its_worth_over_all_shards(world: World) -> None:
    backlog(world, 0, 15)
    backlog(world, 1, 25)
    launcher = RecordingLauncher()

    assert scaler(world, launcher).check() == 4
    assert launcher.requests == [4]
    assert world.metrics.counts["ExecutorsLaunched"] == 4


def test_given_executors_still_starting_when_the_backlog_is_unchanged_then_none_more_until_they_read(
    world: World,
) -> None:
    backlog(world, 0, 30)
    fan_out = scaler(world, RecordingLauncher())

    # The three started at once are still starting (not reading) for start_ms: nothing more meanwhile.
    assert checks(world, fan_out, 5) == [3, 0, 0, 0, 0]
    # Then they read, and the backlog is still there: it needs three more beside them.
    assert fan_out.check() == 3


def test_given_backlog_lasting_when_checking_then_the_fleet_grows_to_the_ceiling_bounded_per_check(
    world: World,
) -> None:
    backlog(world, 0, 10_000)
    fan_out = scaler(world, RecordingLauncher())

    started = checks(world, fan_out, 10)

    assert started == [10, 10, 5, 0, 0, 0, 0, 0, 0, 0]
    assert running(world) == POLICY.max_executors


def test_given_executors_ending_their_run_when_the_backlog_lasts_then_they_are_replaced_within_the_ceiling(
    world: World,
) -> None:
    backlog(world, 0, 10_000)
    fan_out = scaler(world, RecordingLauncher())
    checks(world, fan_out, 3)  # 10, 10 and 5 started at 0, 1 and 2 s
    world.clock.set(world.clock.now_ms() - 3_000 + POLICY.executor_run_ms)  # the first ten ended their run

    assert checks(world, fan_out, 3) == [10, 10, 5]
    assert running(world) == POLICY.max_executors


def test_given_two_promoters_when_both_check_the_same_backlog_then_they_launch_for_it_once(
    world: World,
) -> None:
    backlog(world, 0, 10_000)
    first, second = RecordingLauncher(), RecordingLauncher()
    promoters = [scaler(world, first, "promoter-a"), scaler(world, second, "promoter-b")]

    for _ in range(5):
        for fan_out in promoters:
            fan_out.check()
        world.clock.advance(POLICY.check_interval_ms)

    assert first.started + second.started == POLICY.max_executors
    assert running(world) == POLICY.max_executors


def test_given_launcher_refusing_when_checking_then_what_did_not_start_is_not_counted(world: World) -> None:
    backlog(world, 0, 50)
    launcher = RecordingLauncher(accept=2)
    fan_out = scaler(world, launcher)

    assert fan_out.check() == 2
    assert running(world) == 2
    world.clock.advance(POLICY.check_interval_ms)
    assert fan_out.check() == 2  # the three refused are asked for again at the next check
    assert launcher.requests == [5, 3]


def test_given_redis_down_when_checking_between_ticks_then_the_promoter_goes_on(world: World) -> None:
    backlog(world, 0, 50)
    redis = world.redis("promoter")
    redis.faults.fail("reserve_executors")
    launcher = RecordingLauncher()
    fan_out = ExecutorScaler(redis, world.clock, [0, 1], launcher, world.metrics, redis, POLICY)

    fan_out._check_quietly()  # what the promoter calls between ticks: the blip is swallowed
    world.clock.advance(POLICY.check_interval_ms)
    fan_out._check_quietly()

    assert launcher.requests == [5]


class TickingPromoter:
    """Ticks every 250 ms of the frozen clock until its deadline, calling `between` after each tick."""

    def __init__(self, world: World) -> None:
        self.clock = world.clock
        self.runs: list[int] = []
        self.next_due_ms: int | None = None  # nothing due: no idle-mode lead start

    def run(self, deadline_ms: int, between: Callable[[], object] | None = None) -> int:
        """Returns the ticks made (one job moved each)."""
        self.runs.append(deadline_ms)
        ticks = 0
        while self.clock.now_ms() < deadline_ms:
            ticks += 1
            if between is not None:
                between()
            self.clock.advance(250)
        return ticks


class CountingIndex(FakeIndex):
    """The world's Redis, recording when each backlog read happened."""

    reads_at: list[int]

    def undelivered(self, shard: int) -> int:
        """Records the time, then reads."""
        self.reads_at.append(self.clock.now_ms())
        return super().undelivered(shard)


def test_given_deadline_when_promoting_then_one_run_to_it_reads_the_backlog_once_per_check_interval(
    world: World,
) -> None:
    redis = CountingIndex(world.memory, "promoter", clock=world.clock)
    redis.reads_at = []
    promoter = TickingPromoter(world)
    fan_out = ExecutorScaler(redis, world.clock, [0, 1], RecordingLauncher(), world.metrics, redis, POLICY)
    start = world.clock.now_ms()

    moved = fan_out.promote_until(promoter, start + 2_500)  # type: ignore[arg-type]

    # One run to the deadline (its per-shard waiters start once), the backlog of both shards read at
    # 0, 1000 and 2000 ms although the promoter ticked every 250 ms.
    assert promoter.runs == [start + 2_500]
    assert moved == 10
    assert [at - start for at in redis.reads_at] == [0, 0, 1_000, 1_000, 2_000, 2_000]


class Presence:
    """Whether an executor marks itself alive (adapters/redis/fanout.py keeps it in Redis)."""

    def __init__(self, alive: bool) -> None:
        self.alive = alive

    def mark_executor_alive(self, ttl_ms: int) -> None:
        self.alive = True

    def clear_executor_alive(self) -> None:
        self.alive = False

    def executor_alive(self) -> bool:
        return self.alive


def idle_scaler(
    world: World, launcher: RecordingLauncher, presence: Presence, ceiling: int = 25
) -> ExecutorScaler:
    redis: FakeIndex = world.redis("promoter")
    policy = FanOutPolicy(
        backlog_per_executor=PER_EXECUTOR,
        max_executors=ceiling,
        check_interval_ms=1_000,
        start_ms=5_000,
        executor_run_ms=60_000,
        lead_ms=3_000,
    )
    return ExecutorScaler(
        redis, world.clock, [0, 1], launcher, world.metrics, redis, policy, presence=presence
    )


def test_given_idle_mode_when_one_entry_waits_and_no_executor_runs_then_one_is_started_once(
    world: World,
) -> None:
    backlog(world, 1, 1)
    launcher = RecordingLauncher()
    fan_out = idle_scaler(world, launcher, Presence(alive=False))

    # the second check falls within the first launch's start: it counts as starting, none more
    assert checks(world, fan_out, 2) == [1, 0]
    assert launcher.requests == [1]


def test_given_idle_mode_when_an_executor_runs_then_a_small_backlog_starts_none(world: World) -> None:
    backlog(world, 0, 3)
    launcher = RecordingLauncher()

    assert idle_scaler(world, launcher, Presence(alive=True)).check() == 0
    assert launcher.requests == []


def test_given_idle_mode_and_ceiling_zero_when_work_waits_then_still_one_executor(world: World) -> None:
    backlog(world, 0, 1)
    launcher = RecordingLauncher()

    assert idle_scaler(world, launcher, Presence(alive=False), ceiling=0).check() == 1


def test_given_idle_mode_when_a_member_is_due_within_the_lead_then_an_executor_is_started_ahead(
    world: World,
) -> None:
    launcher = RecordingLauncher()
    fan_out = idle_scaler(world, launcher, Presence(alive=False))
    now_ms = world.clock.now_ms()

    assert fan_out.check(next_due_ms=now_ms + 3_001) == 0
    world.clock.advance(1_000)
    assert fan_out.check(next_due_ms=now_ms + 3_001) == 1


def test_given_idle_mode_when_nothing_waits_or_is_due_then_no_executor(world: World) -> None:
    launcher = RecordingLauncher()

    assert idle_scaler(world, launcher, Presence(alive=False)).check(next_due_ms=None) == 0
    assert launcher.requests == []
