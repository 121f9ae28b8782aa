"""check_shard_count: the engine records its shard count and refuses to run below the recorded one."""

from __future__ import annotations

import pytest

from hookline.domain.clock import FrozenClock
from hookline.domain.errors import ShardCountLowered
from hookline.usecases.shards import check_shard_count
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
