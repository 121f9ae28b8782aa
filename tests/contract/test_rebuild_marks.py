"""RebuildMarkStore contract (the rebuild HASH) and the epoch a new consumer group writes, fake and real."""

from __future__ import annotations

from hookline.adapters.redis import keys as redis_keys
from hookline.domain.reconcile import RebuildMarks
from tests.contract.conftest import RedisBackend


def test_given_group_created_then_a_new_epoch_not_yet_rebuilt_and_ensured_again_unchanged(
    redis_backend: RedisBackend,
) -> None:
    roles = redis_backend.reaper
    assert roles.marks(0) == RebuildMarks(None, None)

    roles.ensure_group(0)
    epoch = roles.marks(0).epoch
    roles.ensure_group(0)

    assert epoch is not None
    assert roles.marks(0) == RebuildMarks(epoch, None)
    assert roles.marks(0).lost
    assert roles.start_epoch(0) == epoch
    roles.finish_rebuild(0, epoch)
    assert roles.marks(0) == RebuildMarks(epoch, epoch)
    assert not roles.marks(0).lost
    assert roles.marks(1) == RebuildMarks(None, None)


def test_given_redis_lost_everything_when_an_executor_reads_then_the_group_comes_back_in_a_new_epoch(
    redis_backend: RedisBackend,
) -> None:
    roles = redis_backend.executor
    roles.ensure_group(0)
    before = roles.start_epoch(0)
    roles.finish_rebuild(0, before)
    redis_backend.probe.flush()
    assert roles.marks(0) == RebuildMarks(None, None)

    assert roles.read_ready([0], 10, 0) == []  # NOGROUP: the group is made again

    after = roles.marks(0)
    assert after.epoch is not None and after.epoch != before
    assert after.rebuilt is None and after.lost


def test_given_no_epoch_when_started_then_one_is_written_once(redis_backend: RedisBackend) -> None:
    first = redis_backend.reaper.start_epoch(3)

    assert redis_backend.executor.start_epoch(3) == first
    assert redis_backend.reaper.marks(3) == RebuildMarks(first, None)
    redis_backend.reaper.ensure_group(3)  # a group made after the epoch: a new epoch (Redis had none)
    assert redis_backend.reaper.marks(3).epoch != first


def test_given_cursor_saved_then_read_back_with_its_mode_and_cleared_when_the_scan_finished(
    redis_backend: RedisBackend,
) -> None:
    marks = redis_backend.reaper
    epoch = marks.start_epoch(0)

    marks.save_cursor(0, "due", '{"pk": {"S": "t|x"}}')  # a cursor may hold the separator itself
    assert marks.marks(0) == RebuildMarks(epoch, None, "due", '{"pk": {"S": "t|x"}}')
    marks.save_cursor(0, f"full:{epoch}", "")
    assert marks.marks(0) == RebuildMarks(epoch, None, f"full:{epoch}", None)
    marks.save_cursor(0, "due", None)
    assert marks.marks(0) == RebuildMarks(epoch, None)
    assert redis_backend.probe.hash(redis_keys.rebuild_key(0)) == {"epoch": epoch}
