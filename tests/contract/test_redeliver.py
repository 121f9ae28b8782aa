"""ReadyStream.redeliver contract (redeliver.lua over XAUTOCLAIM), fake and real alike.

Idle time is Redis's own: entries read as `old` are left idle for OLD_MS (backend.elapse), entries read
after that are fresh, and MIN_IDLE_MS lies in between. A malformed entry (no member, a delivery count Lua
cannot read, or exhausted with a member that does not decode) is dead-lettered by the stream itself with
reason malformed_entry at the role's clock, and never stops the entries beside it.
"""

from __future__ import annotations

import pytest

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.stream import MALFORMED_REASON
from hookline.domain.delivery import StreamEntry
from hookline.domain.models import Member
from tests.contract.conftest import EXECUTOR, GROUP, REAPER, RedisBackend
from tests.contract.redis_cases import NOW, A, B, C, entry, state

READY = redis_keys.ready_stream(0)
OLD_MS = 300
MIN_IDLE_MS = 200
LATER = NOW + 5_000


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


def test_given_redis_flushed_when_reaped_then_nothing_to_redeliver_and_scan_finished(
    redis_backend: RedisBackend,
) -> None:
    deliver(redis_backend, entry(A))
    redis_backend.probe.flush()  # a fail-over to an empty replica: the stream and its group are gone

    result = redis_backend.reaper.redeliver(0, MIN_IDLE_MS, LATER, 5)

    # Nothing is held there any more (the reaper re-indexes the jobs from DynamoDB); the group is not
    # recreated here: the readers and the reaper's ensure_group do that.
    assert (result.redelivered, result.exhausted, result.scan_finished) == (0, [], True)


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


def pending_raw(backend: RedisBackend, *fields: dict[str, str]) -> list[str]:
    """Appends raw entries and reads them undecoded as the executor, which then dies: left pending."""
    backend.executor.ensure_group(0)
    for item in fields:
        backend.probe.add_entry(READY, item)
    return backend.probe.read_raw(READY, GROUP, EXECUTOR)


def test_given_member_that_is_not_a_member_and_deliveries_left_when_reaped_then_copied_as_text(
    redis_backend: RedisBackend,
) -> None:
    pending_raw(redis_backend, {"m": "garbage", "d": "0"})
    redis_backend.elapse(OLD_MS)

    result = redis_backend.reaper.redeliver(0, MIN_IDLE_MS, LATER, 5)

    # The script does not decode members: the reader it reaches next dead-letters it (read_ready).
    assert (result.redelivered, result.exhausted, result.malformed) == (1, [], 0)
    assert [fields for _, fields in redis_backend.probe.stream(READY)] == [{"m": "garbage", "d": "1"}]
    assert redis_backend.executor.read_ready([0], 10, 0) == []
    assert redis_backend.state()["dead"] == [
        {"m": "garbage", "reason": MALFORMED_REASON, "at": str(redis_backend.clock.now_ms())}
    ]


@pytest.mark.parametrize(
    ("fields", "want_dead_member"),
    [
        pytest.param({"d": "0"}, "", id="given_entry_without_member"),
        pytest.param({"d": "4"}, "", id="given_entry_without_member_that_would_be_exhausted"),
        pytest.param({"m": A.encode(), "d": "x"}, A.encode(), id="given_delivery_count_not_a_number"),
        pytest.param({"m": A.encode(), "d": ""}, A.encode(), id="given_empty_delivery_count"),
        pytest.param({"m": "garbage", "d": "4"}, "garbage", id="given_undecodable_member_when_exhausted"),
    ],
)
def test_given_malformed_idle_entry_beside_good_ones_when_reaped_then_dead_lettered_and_the_rest_recovered(
    redis_backend: RedisBackend, fields: dict[str, str], want_dead_member: str
) -> None:
    pending_raw(redis_backend, entry(B), fields, entry(C, 4))
    redis_backend.elapse(OLD_MS)
    redis_backend.clock.advance(7)

    result = redis_backend.reaper.redeliver(0, MIN_IDLE_MS, LATER, 5)

    assert (result.redelivered, result.malformed, result.scan_finished) == (1, 1, True)
    assert [e.member for e in result.exhausted] == [C]
    dead = {"m": want_dead_member, "reason": MALFORMED_REASON, "at": str(redis_backend.clock.now_ms())}
    assert redis_backend.state() == state(
        ready=[entry(C, 4), entry(B, 1)], pending=[(C, REAPER, 2)], inflight={B: LATER}, dead=[dead]
    )
    assert redis_backend.metrics.counts["MalformedEntries"] == 1


def test_given_only_malformed_entries_when_reaped_again_then_nothing_left_to_discard(
    redis_backend: RedisBackend,
) -> None:
    pending_raw(redis_backend, {"d": "0"}, {"m": "x", "d": "nan?"})
    redis_backend.elapse(OLD_MS)

    first = redis_backend.reaper.redeliver(0, MIN_IDLE_MS, LATER, 5)
    second = redis_backend.reaper.redeliver(0, 0, LATER, 5)

    assert (first.malformed, second.malformed, second.redelivered) == (2, 0, 0)
    assert redis_backend.state()["pending"] == []
    assert len(redis_backend.state()["dead"]) == 2


def test_given_flow_member_when_exhausted_then_decoded_with_its_flow(redis_backend: RedisBackend) -> None:
    member = Member.decode('t/f/2/["partner",5,1000,"pool",2]')
    (old,) = deliver(redis_backend, entry(member, 4))
    redis_backend.elapse(OLD_MS)

    result = redis_backend.reaper.redeliver(0, MIN_IDLE_MS, LATER, 5)

    assert result.exhausted == [StreamEntry(0, old.entry_id, member, 5)]
