"""The deployment's shard count, recorded in DynamoDB: an engine with fewer shards refuses to start."""

from __future__ import annotations

import dataclasses
import threading

import pytest

from hookline.adapters.dynamo import tables
from hookline.domain.errors import ShardCountLowered
from hookline.domain.keys import KeyRecord
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container

pytestmark = pytest.mark.integration


def engine(settings: Settings, shards: int) -> Container:
    return Container(dataclasses.replace(settings, shards=shards), consumer=f"engine-{shards}")


def test_given_first_start_when_checked_then_the_count_is_recorded_once(settings: Settings) -> None:
    first = engine(settings, 4)

    assert first.check_shards() == 4
    assert engine(settings, 4).check_shards() == 4
    assert recorded(first) == 4


def test_given_jobs_written_with_four_shards_when_started_with_two_then_it_refuses_naming_the_fix(
    settings: Settings,
) -> None:
    engine(settings, 4).check_shards()

    with pytest.raises(ShardCountLowered) as refused:
        engine(settings, 2).check_shards()

    assert (refused.value.recorded, refused.value.configured) == (4, 2)
    assert "shards 2..3 would never run" in str(refused.value)
    assert "to 4 or more" in str(refused.value)
    assert recorded(engine(settings, 2)) == 4  # the refusal changed nothing


def test_given_more_shards_than_recorded_when_started_then_allowed_and_the_new_count_recorded(
    settings: Settings,
) -> None:
    engine(settings, 2).check_shards()

    assert engine(settings, 8).check_shards() == 8

    with pytest.raises(ShardCountLowered):
        engine(settings, 2).check_shards()


def test_given_cold_starts_racing_with_different_counts_then_the_largest_is_recorded(
    settings: Settings,
) -> None:
    counts = [1, 3, 6, 2, 6, 5]
    outcomes: dict[int, object] = {}

    def start(i: int, shards: int) -> None:
        try:
            outcomes[i] = engine(settings, shards).check_shards()
        except ShardCountLowered as error:
            outcomes[i] = error

    threads = [threading.Thread(target=start, args=(i, n)) for i, n in enumerate(counts)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)

    assert recorded(engine(settings, 6)) == 6
    for i, shards in enumerate(counts):
        # A start below 6 is refused or not depending on whether a 6 was written first; a start with 6
        # never is, and whatever a start saw recorded was at least its own count.
        outcome = outcomes[i]
        if isinstance(outcome, ShardCountLowered):
            assert outcome.recorded > shards
        else:
            assert isinstance(outcome, int)
            assert outcome >= shards
        assert shards < 6 or outcome == 6
    assert engine(settings, 6).check_shards() == 6


def test_given_shard_count_item_in_the_keys_table_when_keys_are_listed_then_it_is_not_a_key(
    settings: Settings,
) -> None:
    container = engine(settings, 3)
    container.check_shards()
    container.keys.put_key(KeyRecord("k1", "acme", "0" * 64, ("jobs:read",), 1))

    assert [record.key_id for record in container.keys.list_keys()] == ["k1"]
    assert container.keys.get_key(tables.SHARD_COUNT_KEY) is None


def recorded(container: Container) -> int:
    reply = container.dynamodb.get_item(
        TableName=container.settings.api_keys_table,
        Key={tables.API_KEYS_PK: {"S": tables.SHARD_COUNT_KEY}},
        ConsistentRead=True,
    )
    return int(reply["Item"]["shards"]["N"])
