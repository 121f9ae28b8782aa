"""check_shard_count and check_bucket_count: the engine records its shard and bucket counts, and refuses to
run below the recorded shard count or with another bucket count."""

from __future__ import annotations

import pytest

from hookline.domain.errors import JobBucketsChanged, ShardCountLowered
from hookline.usecases.shards import StartUpChecks, check_bucket_count, check_shard_count
from tests.fakes.clock import FrozenClock
from tests.fakes.faults import DynamoUnavailable
from tests.fakes.keys import FakeKeyStore
from tests.fakes.metrics import RecordingMetrics

NOW = 1_767_225_600_000


def test_given_nothing_recorded_when_checked_then_the_configured_count_is_recorded() -> None:
    keys = FakeKeyStore()

    assert check_shard_count(keys, 4, FrozenClock(NOW)) == 4
    assert keys.shards == 4


def test_given_four_recorded_when_started_with_two_then_refused_and_the_record_kept() -> None:
    keys = FakeKeyStore()
    check_shard_count(keys, 4, FrozenClock(NOW))

    with pytest.raises(ShardCountLowered) as refused:
        check_shard_count(keys, 2, FrozenClock(NOW))

    assert (refused.value.recorded, refused.value.configured) == (4, 2)
    assert keys.shards == 4


def test_given_two_recorded_when_started_with_eight_then_the_larger_count_is_recorded() -> None:
    keys = FakeKeyStore()
    check_shard_count(keys, 2, FrozenClock(NOW))

    assert check_shard_count(keys, 8, FrozenClock(NOW)) == 8
    assert keys.shards == 8


def test_given_no_bucket_count_recorded_when_checked_then_recorded_and_the_same_count_passes() -> None:
    keys = FakeKeyStore()

    assert check_bucket_count(keys, 8, FrozenClock(NOW)) == 8
    assert check_bucket_count(keys, 8, FrozenClock(NOW)) == 8
    assert keys.buckets == 8


@pytest.mark.parametrize("configured", [4, 16])
def test_given_eight_buckets_recorded_when_started_with_another_count_then_refused_either_way(
    configured: int,
) -> None:
    keys = FakeKeyStore()
    check_bucket_count(keys, 8, FrozenClock(NOW))

    with pytest.raises(JobBucketsChanged) as refused:
        check_bucket_count(keys, configured, FrozenClock(NOW))

    assert (refused.value.recorded, refused.value.configured) == (8, configured)
    assert f"hookline migrate-keys --buckets {configured}" in str(refused.value)
    assert keys.buckets == 8


class SleepingClock(FrozenClock):
    """A frozen clock that a StartUpChecks' sleep advances; records each sleep in ms."""

    def __init__(self, now_ms: int) -> None:
        super().__init__(now_ms)
        self.slept_ms: list[int] = []

    def sleep(self, seconds: float) -> None:
        self.slept_ms.append(round(seconds * 1000))
        self.advance(round(seconds * 1000))


def start_up_checks(keys: FakeKeyStore, clock: SleepingClock, shards: int = 4) -> StartUpChecks:
    return StartUpChecks(
        [
            lambda: check_shard_count(keys, shards, clock),
            lambda: check_bucket_count(keys, 8, clock),
        ],
        clock,
        RecordingMetrics(),
        sleep=clock.sleep,
    )


def test_given_a_throttled_store_when_checks_run_then_they_are_tried_again_until_they_pass() -> None:
    keys, clock = FakeKeyStore(), SleepingClock(NOW)
    keys.faults.fail_next("record_shards", times=3)
    keys.faults.fail_next("record_buckets", times=2)
    checks = start_up_checks(keys, clock)

    checks.ensure(NOW + 60_000)

    assert checks.passed
    assert (keys.shards, keys.buckets) == (4, 8)
    # Three failed shard checks, then the shard check passes and the bucket check fails twice.
    assert keys.faults.calls("record_shards") == 6
    assert keys.faults.calls("record_buckets") == 3
    assert clock.slept_ms == [100, 200, 400, 800, 1600]


def test_given_checks_passed_when_ensured_again_then_nothing_is_read() -> None:
    keys, clock = FakeKeyStore(), SleepingClock(NOW)
    checks = start_up_checks(keys, clock)
    checks.ensure(NOW + 60_000)

    checks.ensure(NOW + 60_000)

    assert keys.faults.calls("record_shards") == 1


def test_given_a_store_failing_past_the_deadline_when_ensured_then_the_error_is_raised_at_the_deadline() -> (
    None
):
    keys, clock = FakeKeyStore(), SleepingClock(NOW)
    keys.faults.fail_next("record_shards", times=1_000)
    checks = start_up_checks(keys, clock)

    with pytest.raises(DynamoUnavailable):
        checks.ensure(NOW + 5_000)

    assert not checks.passed
    assert clock.now_ms() == NOW + 5_000  # waited out to the deadline, never past it
    assert clock.slept_ms == [100, 200, 400, 800, 1600, 1900]  # the last wait cut to the deadline


def test_given_a_lowered_shard_count_when_ensured_then_refused_at_once() -> None:
    keys, clock = FakeKeyStore(), SleepingClock(NOW)
    check_shard_count(keys, 8, clock)
    checks = start_up_checks(keys, clock, shards=4)

    with pytest.raises(ShardCountLowered):
        checks.ensure(NOW + 60_000)

    assert clock.slept_ms == []
    assert not checks.passed
