"""Jobs written while Redis failed their index write: noted in DynamoDB, indexed by the reaper's next check.

Without the note such a job waited for the reaper's due scan, which reads only jobs due within its horizon:
a job due in an hour waited until then, one due now up to a minute. Each test first lets a reaper finish its
rebuild of the new (fake) Redis, so what follows is an ordinary pass, not a full rebuild that would find
every live job anyway.
"""

from __future__ import annotations

from hookline.domain.models import JobRequest, JobStatus
from tests.fakes.faults import DynamoUnavailable
from tests.fakes.unindexed import FakeUnindexedLog
from tests.unit.usecases.world import TENANT, URL, World, member

HOUR_MS = 3_600_000


def rebuilt(world: World) -> World:
    """Lets a reaper complete the first rebuild of the world's Redis; returns the world."""
    world.reap()
    assert not world.reaper().run(world.clock.now_ms() + 60_000).rebuilt
    return world


def submit_while_redis_fails(world: World, delay_s: int = 3_600) -> str:
    """Submits a job due in delay_s whose index write fails; returns its member."""
    world.index.faults.fail_next("index")
    result = world.submitter().submit(TENANT, JobRequest.model_validate({"url": URL, "delay_s": delay_s}))
    assert result.created
    return member(result.job)


def test_given_index_failed_at_submit_then_the_job_is_noted_with_its_due_time(world: World) -> None:
    noted = submit_while_redis_fails(rebuilt(world))

    [note] = world.unindexed.notes.values()
    assert [(job.member.encode(), job.due_ms) for job in note.jobs] == [
        (noted, world.clock.now_ms() + HOUR_MS)
    ]
    assert world.state()["due"] == {}


def test_given_a_job_due_in_an_hour_noted_when_the_reaper_watches_then_indexed_at_its_first_check(
    world: World,
) -> None:
    start = rebuilt(world).clock.now_ms()
    noted = submit_while_redis_fails(world)

    report = world.reaper().watch(start + 2_500)

    # The due scan reads only what falls due within seconds: the note is what found this job.
    assert world.state()["due"] == {noted: start + HOUR_MS}
    assert report.reindexed == 1
    assert world.unindexed.notes == {}


def test_given_redis_still_down_at_the_check_then_the_note_stays_until_a_check_can_index(
    world: World,
) -> None:
    start = rebuilt(world).clock.now_ms()
    noted = submit_while_redis_fails(world)
    redis = world.redis("reaper")
    redis.faults.fail_next("indexed_members", times=2)  # the check before the pass, and the pass's own

    reaper = world.reaper(redis)
    reaper.watch(start + 1)  # the deadline passes during the first check's back-off

    assert list(world.unindexed.notes) == [0]
    reaper.watch(world.clock.now_ms() + 2_500)
    assert world.state()["due"] == {noted: start + HOUR_MS}
    assert world.unindexed.notes == {}


def test_given_more_jobs_than_a_note_holds_when_watched_then_a_full_scan_indexes_them_all(
    world: World,
) -> None:
    world.unindexed = FakeUnindexedLog(max_noted=1)
    start = rebuilt(world).clock.now_ms()
    noted = [submit_while_redis_fails(world, delay_s) for delay_s in (600, 1_200, 1_800)]

    assert world.unindexed.notes[0].overflow
    world.reaper().watch(start + 2_500)

    assert world.state()["due"] == {
        m: start + s * 1000 for m, s in zip(noted, (600, 1_200, 1_800), strict=True)
    }
    assert world.unindexed.notes == {}


def test_given_the_note_fails_too_then_the_submit_succeeds_and_the_due_scan_still_indexes_it(
    world: World,
) -> None:
    start = rebuilt(world).clock.now_ms()
    world.unindexed.faults.fail_next("note_unindexed")
    noted = submit_while_redis_fails(world, delay_s=30)

    assert world.metrics.counts["UnindexedNoteFailed"] == 1
    assert world.unindexed.notes == {}
    world.clock.advance(26_000)  # within the due scan's horizon of its due time
    world.reap()
    assert world.state()["due"] == {noted: start + 30_000}


def test_given_dynamodb_fails_reading_the_notes_then_the_watch_goes_on_and_reads_them_next_check(
    world: World,
) -> None:
    start = rebuilt(world).clock.now_ms()
    noted = submit_while_redis_fails(world)
    world.unindexed.faults.fail_next("unindexed", times=2, error=lambda: DynamoUnavailable("throttled"))

    world.reaper().watch(start + 2_500)

    assert world.metrics.counts["UnindexedReadFailed"] == 2
    assert world.state()["due"] == {noted: start + HOUR_MS}
    assert world.unindexed.notes == {}


def test_given_index_failed_at_replay_then_noted_and_indexed_by_the_next_check(world: World) -> None:
    start = rebuilt(world).clock.now_ms()
    job = world.submit()
    world.store.tables.jobs[(TENANT, job.job_id)] = world.job(job).with_changes(status=JobStatus.DEAD)
    world.index.faults.fail_next("index")

    replayed = world.manager().replay(TENANT, job.job_id)

    assert world.unindexed.notes[0].jobs[0].member == replayed.member()
    world.reaper().watch(world.clock.now_ms() + 1_500)
    # Due at the replay: indexing puts it straight onto the ready stream (beside the first generation's
    # entry, which this test left behind when it made the job dead in the table alone).
    assert world.state()["inflight"][member(replayed)] == replayed.due_ms
    assert replayed.due_ms >= start
    assert world.unindexed.notes == {}
