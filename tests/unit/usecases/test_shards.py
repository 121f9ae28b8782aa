"""check_shard_count and check_bucket_count: the engine records its shard and bucket counts, and refuses to
run below the recorded shard count or with another bucket count."""

from __future__ import annotations

import pytest

from hookline.domain.clock import FrozenClock
from hookline.domain.errors import JobBucketsChanged, ShardCountLowered
from hookline.usecases.shards import check_bucket_count, check_shard_count
from tests.fakes.keys import FakeKeyStore

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
