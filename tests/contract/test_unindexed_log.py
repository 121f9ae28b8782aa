"""UnindexedLog contract: notes per shard, bounded (then overflowed), cleared only at the version read.

Fake and DynamoDB (moto) alike. The notes are deployment items of the API keys table, which the contract
suite shares, so each test uses shards no other test uses.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from hookline.adapters.dynamo.unindexed import DynamoUnindexedLog
from hookline.domain.models import Member
from hookline.ports import UnindexedLog
from tests.contract.conftest import BACKENDS, unused_shards
from tests.fakes.unindexed import FakeUnindexedLog

NOW = 1_767_225_600_000
MAX_NOTED = 3


@pytest.fixture(params=BACKENDS)
def log(request: pytest.FixtureRequest) -> Iterator[UnindexedLog]:
    """Yields the fake log, then the DynamoDB log on moto, both holding at most MAX_NOTED jobs a shard."""
    if request.param == "fake":
        yield FakeUnindexedLog(max_noted=MAX_NOTED)
        return
    settings: Any
    settings, client = request.getfixturevalue("contract_tables")
    yield DynamoUnindexedLog(client, settings.api_keys_table, max_noted=MAX_NOTED)


@pytest.fixture
def shards() -> list[int]:
    """Returns three shards no other test uses."""
    return unused_shards(3)


def job(n: int) -> Member:
    return Member("acme", f"01JOB{n:04d}", 1)


def test_given_nothing_noted_then_no_note(log: UnindexedLog, shards: list[int]) -> None:
    assert log.unindexed(shards) == []


def test_given_jobs_noted_on_two_shards_then_each_note_lists_its_jobs_once(
    log: UnindexedLog, shards: list[int]
) -> None:
    a, b, _ = shards
    log.note_unindexed(job(1), a, NOW + 10, NOW)
    log.note_unindexed(job(2), a, NOW + 5, NOW)
    log.note_unindexed(job(2), a, NOW + 5, NOW)  # a writer retried: noted once
    log.note_unindexed(job(3), b, NOW + 7, NOW)

    notes = log.unindexed(shards)

    assert [note.shard for note in notes] == [a, b]
    assert [(j.member, j.due_ms) for j in notes[0].jobs] == [(job(2), NOW + 5), (job(1), NOW + 10)]
    assert [(j.member, j.due_ms) for j in notes[1].jobs] == [(job(3), NOW + 7)]
    assert not notes[0].overflow
    assert notes[0].version == 3


def test_given_a_note_read_when_a_job_is_noted_after_then_clearing_at_the_old_version_keeps_it(
    log: UnindexedLog, shards: list[int]
) -> None:
    shard = shards[0]
    log.note_unindexed(job(1), shard, NOW, NOW)
    [read] = log.unindexed([shard])
    log.note_unindexed(job(2), shard, NOW, NOW)

    assert log.clear_unindexed(shard, read.version) is False
    [again] = log.unindexed([shard])
    assert [j.member for j in again.jobs] == [job(1), job(2)]
    assert log.clear_unindexed(shard, again.version) is True
    assert log.unindexed([shard]) == []
    assert log.clear_unindexed(shard, again.version) is False  # nothing left to clear


def test_given_more_jobs_than_a_note_holds_then_it_is_marked_overflowed(
    log: UnindexedLog, shards: list[int]
) -> None:
    shard = shards[0]
    for n in range(MAX_NOTED + 2):
        log.note_unindexed(job(n), shard, NOW, NOW)

    [note] = log.unindexed([shard])

    assert note.overflow
    assert len(note.jobs) == MAX_NOTED
    assert note.version == MAX_NOTED + 2
