"""ReadyStream.redeliver contract (redeliver.lua over XAUTOCLAIM), fake and real alike.

Idle time is Redis's own: entries read as `old` are left idle for OLD_MS (backend.elapse), entries read
after that are fresh, and MIN_IDLE_MS lies in between.
"""

from __future__ import annotations

import pytest
import redis

from hookline.adapters.redis import keys as redis_keys
from hookline.domain.delivery import StreamEntry
from hookline.domain.models import Member
from tests.contract.conftest import EXECUTOR, REAPER, RedisBackend
from tests.contract.redis_cases import NOW, A, B, C, entry, state
from tests.fakes.faults import ScriptError

READY = redis_keys.ready_stream(0)
OLD_MS = 300
MIN_IDLE_MS = 200
LATER = NOW + 5_000
# A malformed entry fails a script (redis.ResponseError, the fake's ScriptError) or the decoding of a reply.
MALFORMED = (redis.ResponseError, ScriptError, KeyError, IndexError, ValueError)


def deliver(backend: RedisBackend, *fields: dict[str, str]) -> list[StreamEntry]:
    """Appends raw entries and reads them as the executor (so they are pending under it)."""
    backend.executor.ensure_group(0)
    for item in fields:
        backend.probe.add_entry(READY, item)
    return backend.executor.read_ready([0], 100, 0) if fields else []


def test_given_fresh_entries_when_reaped_then_untouched_and_scan_finished(
    redis_backend: RedisBackend,
) -> None:
    deliver(redis_backend, entry(A), entry(B, 1))

    result = redis_backend.reaper.redeliver(0, MIN_IDLE_MS, LATER, 5)

    assert (result.redelivered, result.exhausted, result.scan_finished) == (0, [], True)
    assert redis_backend.state() == state(
        ready=[entry(A), entry(B, 1)], pending=[(A, EXECUTOR, 1), (B, EXECUTOR, 1)]
    )


def test_given_idle_and_fresh_entries_when_reaped_then_idle_one_readded_with_d_plus_one(
    redis_backend: RedisBackend,
) -> None:
    (old,) = deliver(redis_backend, entry(A))
    redis_backend.elapse(OLD_MS)
    deliver(redis_backend, entry(B))

    result = redis_backend.reaper.redeliver(0, MIN_IDLE_MS, LATER, 5)

    assert (result.redelivered, result.exhausted, result.scan_finished) == (1, [], True)
    assert redis_backend.state() == state(
        ready=[entry(B), entry(A, 1)], pending=[(B, EXECUTOR, 1)], inflight={A: LATER}
    )
    assert old.entry_id not in [i for i, _ in redis_backend.probe.stream(READY)], "a new entry, a new id"
    (again,) = redis_backend.executor.read_ready([0], 10, 0)
    assert (again.member, again.deliveries) == (A, 1)


def test_given_entry_reaching_max_deliveries_when_reaped_then_returned_and_left_pending_under_reaper(
    redis_backend: RedisBackend,
) -> None:
    (old,) = deliver(redis_backend, entry(A, 2))
    redis_backend.elapse(OLD_MS)

    result = redis_backend.reaper.redeliver(0, MIN_IDLE_MS, LATER, 3)

    assert result.redelivered == 0
    assert result.exhausted == [StreamEntry(0, old.entry_id, A, 3)]
    assert redis_backend.state() == state(ready=[entry(A, 2)], pending=[(A, REAPER, 2)])


def test_given_idle_entries_beyond_batch_when_reaped_in_two_calls_then_cursor_carries_the_scan(
    redis_backend: RedisBackend,
) -> None:
    deliver(redis_backend, entry(A), entry(B), entry(C))
    redis_backend.elapse(OLD_MS)
    reaper = redis_backend.reaper

    first = reaper.redeliver(0, MIN_IDLE_MS, LATER, 5, batch=2)
    second = reaper.redeliver(0, MIN_IDLE_MS, LATER, 5, cursor=first.next_cursor, batch=2)

    assert (first.redelivered, first.scan_finished) == (2, False)
    assert (second.redelivered, second.scan_finished) == (1, True)
    assert redis_backend.state() == state(
        ready=[entry(A, 1), entry(B, 1), entry(C, 1)], inflight={A: LATER, B: LATER, C: LATER}
    )


def test_given_deleted_pending_entries_when_reaped_then_dropped_and_counted_in_the_batch(
    redis_backend: RedisBackend,
) -> None:
    delivered = deliver(redis_backend, entry(A), entry(B), entry(C))
    redis_backend.elapse(OLD_MS)
    for gone in delivered[:2]:
        redis_backend.probe.delete_entry(READY, gone.entry_id)

    first = redis_backend.reaper.redeliver(0, MIN_IDLE_MS, LATER, 5, batch=2)
    second = redis_backend.reaper.redeliver(0, MIN_IDLE_MS, LATER, 5, cursor=first.next_cursor, batch=2)

    assert (first.redelivered, first.scan_finished) == (0, False)
    assert (second.redelivered, second.scan_finished) == (1, True)
    assert redis_backend.state() == state(ready=[entry(C, 1)], inflight={C: LATER})


def test_given_member_that_is_not_a_member_when_reaped_then_copied_as_text(
    redis_backend: RedisBackend,
) -> None:
    redis_backend.executor.ensure_group(0)
    redis_backend.probe.add_entry(READY, {"m": "garbage", "d": "0"})
    with pytest.raises(IndexError):  # reading it is what fails (the member does not decode)
        redis_backend.executor.read_ready([0], 10, 0)
    redis_backend.elapse(OLD_MS)

    result = redis_backend.reaper.redeliver(0, MIN_IDLE_MS, LATER, 5)

    assert result.redelivered == 1
    assert [fields for _, fields in redis_backend.probe.stream(READY)] == [{"m": "garbage", "d": "1"}]


@pytest.mark.parametrize(
    ("fields", "max_deliveries"),
    [
        pytest.param({"d": "0"}, 5, id="given_entry_without_member_when_readded_then_the_call_fails"),
        pytest.param({"d": "4"}, 5, id="given_entry_without_member_when_exhausted_then_the_call_fails"),
        pytest.param({"m": "garbage", "d": "4"}, 5, id="given_undecodable_member_when_exhausted_then_fails"),
    ],
)
def test_given_malformed_idle_entry_when_reaped_then_redeliver_raises(
    redis_backend: RedisBackend, fields: dict[str, str], max_deliveries: int
) -> None:
    redis_backend.executor.ensure_group(0)
    redis_backend.probe.add_entry(READY, fields)
    with pytest.raises(MALFORMED):
        redis_backend.executor.read_ready([0], 10, 0)
    redis_backend.elapse(OLD_MS)

    with pytest.raises(MALFORMED):
        redis_backend.reaper.redeliver(0, MIN_IDLE_MS, LATER, max_deliveries)


def test_given_flow_member_when_exhausted_then_decoded_with_its_flow(redis_backend: RedisBackend) -> None:
    member = Member.decode('t/f/2/["partner",5,1000,"pool",2]')
    (old,) = deliver(redis_backend, entry(member, 4))
    redis_backend.elapse(OLD_MS)

    result = redis_backend.reaper.redeliver(0, MIN_IDLE_MS, LATER, 5)

    assert result.exhausted == [StreamEntry(0, old.entry_id, member, 5)]
