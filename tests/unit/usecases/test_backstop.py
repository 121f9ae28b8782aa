"""With no promoter running, executors and the reaper's watch promote what fell due (usecases/backstop.py),
and the watch re-delivers a stopped executor's entries without waiting for its next run.

The clock is frozen at T0; the reaper's and the shard readers' sleeps spend it.
"""

from __future__ import annotations

from hookline.domain import constants
from hookline.domain.models import JobStatus
from tests.unit.usecases.world import MAX_DELIVERIES, REDELIVER_AFTER_MS, T0, World, member

GAP_MS = constants.PROMOTER_GAP_MS


def test_given_no_promoter_when_a_job_falls_due_then_an_executor_promotes_and_delivers_it(
    world: World,
) -> None:
    job = world.submit(delay_s=1)
    world.clock.advance(1_000 + GAP_MS)  # due, and left unpromoted past the gap

    processed = world.executor().run(deadline_ms=world.clock.now_ms() + 500, block_ms=100)

    assert processed == 1
    assert world.job(job).status is JobStatus.SUCCEEDED
    assert world.metrics.counts["BackstopPromoted"] == 1


def test_given_a_job_due_within_the_gap_then_the_backstop_leaves_it_to_the_promoter(world: World) -> None:
    job = world.submit(delay_s=1)
    world.clock.advance(1_000 + GAP_MS - 1)

    world.executor().run(deadline_ms=world.clock.now_ms() + 1, block_ms=1)

    assert world.state()["due"] == {member(job): T0 + 1_000}
    assert world.state()["ready"] == []
    assert "BackstopPromoted" not in world.metrics.counts


def test_given_no_promoter_while_the_reaper_watches_then_it_promotes_what_falls_due_within_the_gap(
    world: World,
) -> None:
    job = world.submit(delay_s=5)

    report = world.reaper().watch(T0 + 5_000 + GAP_MS + 1_000)

    assert report.redelivered == 0
    assert world.state()["due"] == {}
    assert [fields["m"] for fields in world.state()["ready"]] == [member(job)]
    assert world.metrics.counts["BackstopPromoted"] == 1


def test_given_the_only_executor_stops_while_the_reaper_watches_then_its_entry_is_redelivered_once_idle(
    world: World,
) -> None:
    job = world.submit()
    stopped = world.redis("stopped")
    stopped.ensure_group(0)
    stopped.read_ready([0], 100, 0)  # read, then frozen: the entry is never beaten again

    # The watch's first pass finds the entry fresh; only its later checks can see it idle.
    report = world.reaper().watch(T0 + REDELIVER_AFTER_MS + 1_000)

    assert report.redelivered == 1
    assert world.state()["pending"] == []
    assert [fields["m"] for fields in world.state()["ready"]] == [member(job)]


def test_given_dead_lettering_fails_between_checks_then_the_watch_goes_on_and_a_later_check_recovers(
    world: World,
) -> None:
    job = world.submit()
    for _ in range(MAX_DELIVERIES):  # read and abandoned until it is out of deliveries
        world.redis("stopped").read_ready([0], 100, 0)
        world.clock.advance(REDELIVER_AFTER_MS)
        world.reap()
    world.redis("stopped").read_ready([0], 100, 0)
    world.store.faults.fail_next("mark_dead")

    # The failed check claimed the entry (its idle time starts again): a check one idle time later retries.
    report = world.reaper().watch(world.clock.now_ms() + 2 * REDELIVER_AFTER_MS + 3_000)

    assert world.metrics.counts["RecoveryErrors"] == 1
    assert report.dead_lettered == 1
    assert world.job(job).status is JobStatus.DEAD
