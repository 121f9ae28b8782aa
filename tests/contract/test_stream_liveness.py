"""ReadyStream contract for what keeps deliveries alive and readable: heartbeat.lua, undelivered (the group's
lag), malformed entries met by read_ready, consumer pruning (prune_consumers.lua); fake and real alike.

Idle times are Redis's own, as in test_redeliver.py: OLD_MS of backend.elapse makes an entry idle past
MIN_IDLE_MS.
"""

from __future__ import annotations

import pytest

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.stream import MALFORMED_REASON
from hookline.domain.delivery import StreamEntry
from hookline.domain.models import Member
from tests.contract.conftest import EXECUTOR, GROUP, REAPER, RedisBackend
from tests.contract.redis_cases import NOW, A, B, C, F, entry, state

READY = redis_keys.ready_stream(0)
OLD_MS = 300
MIN_IDLE_MS = 200
LATER = NOW + 5_000


def ready_and_read(backend: RedisBackend, consumer: str, *members_due_now: Member) -> list[StreamEntry]:
    """Indexes the members due now on shard 0 and reads them as consumer."""
    roles = backend.roles(consumer)
    roles.ensure_group(0)
    for member in members_due_now:
        backend.executor.index(member, 0, NOW, NOW)
    return roles.read_ready([0], 100, 0)


# heartbeat


def test_given_entries_of_this_and_another_consumer_when_beaten_then_only_its_own_are_held_and_kept_fresh(
    redis_backend: RedisBackend,
) -> None:
    a, b = ready_and_read(redis_backend, EXECUTOR, A, B)
    (c,) = ready_and_read(redis_backend, "other", C)
    redis_backend.executor.ack(b)
    redis_backend.elapse(OLD_MS)

    held = redis_backend.executor.heartbeat([a, b, c])

    assert held == {a.entry_id}
    # A is fresh again (not re-delivered) and its delivery count unchanged; C, idle, is re-delivered.
    assert redis_backend.reaper.redeliver(0, MIN_IDLE_MS, LATER, 5).redelivered == 1
    assert redis_backend.state() == state(
        ready=[entry(A), entry(C, 1)], pending=[(A, EXECUTOR, 1)], inflight={A: NOW, C: LATER}
    )


def test_given_entry_taken_over_by_a_recoverer_when_its_old_holder_beats_then_not_taken_back(
    redis_backend: RedisBackend,
) -> None:
    (a,) = ready_and_read(redis_backend, EXECUTOR, A)
    redis_backend.elapse(OLD_MS)
    assert redis_backend.reaper.redeliver(0, MIN_IDLE_MS, LATER, 1).exhausted == [
        StreamEntry(0, a.entry_id, A, 1)
    ]

    assert redis_backend.executor.heartbeat([a]) == set()
    assert redis_backend.state()["pending"] == [(A.encode(), REAPER, 2)]


def test_given_entries_on_two_shards_when_beaten_then_both_held(redis_backend: RedisBackend) -> None:
    executor = redis_backend.executor
    for shard in (0, 1):
        executor.ensure_group(shard)
    executor.index(A, 0, NOW, NOW)
    executor.index(F, 1, NOW, NOW)
    entries = executor.read_ready([0, 1], 10, 0)

    assert executor.heartbeat(entries) == {e.entry_id for e in entries}
    assert executor.heartbeat([]) == set()


def test_given_pending_entry_deleted_from_the_stream_when_beaten_then_reported_held_and_dropped_from_pending(
    redis_backend: RedisBackend,
) -> None:
    a, b = ready_and_read(redis_backend, EXECUTOR, A, B)
    redis_backend.probe.delete_entry(READY, a.entry_id)

    assert redis_backend.executor.heartbeat([a, b]) == {a.entry_id, b.entry_id}
    assert redis_backend.probe.pending(READY, GROUP) == [(b.entry_id, EXECUTOR, 1)]


def test_given_redis_lost_the_stream_when_beaten_then_nothing_held_and_no_error(
    redis_backend: RedisBackend,
) -> None:
    entries = ready_and_read(redis_backend, EXECUTOR, A)
    redis_backend.probe.flush()

    assert redis_backend.executor.heartbeat(entries) == set()
    assert redis_backend.state() == state()


# undelivered


def test_given_no_stream_or_no_group_then_undelivered_is_zero_or_every_entry(
    redis_backend: RedisBackend,
) -> None:
    executor = redis_backend.executor
    assert executor.undelivered(0) == 0
    executor.index(A, 0, NOW, NOW)
    executor.index(B, 0, NOW, NOW)

    assert executor.undelivered(0) == 2  # the group does not exist yet


def test_given_entries_read_acked_and_redelivered_then_undelivered_counts_only_the_unread(
    redis_backend: RedisBackend,
) -> None:
    executor = redis_backend.executor
    executor.ensure_group(0)
    assert executor.undelivered(0) == 0
    for member in (A, B, C):
        executor.index(member, 0, NOW, NOW)
    assert executor.undelivered(0) == 3

    a, _ = executor.read_ready([0], 2, 0)
    assert executor.undelivered(0) == 1
    executor.ack(a)
    assert executor.undelivered(0) == 1
    redis_backend.elapse(OLD_MS)
    assert redis_backend.reaper.redeliver(0, MIN_IDLE_MS, LATER, 5).redelivered == 1  # b, read by nobody now
    assert executor.undelivered(0) == 2
    assert [e.member for e in executor.read_ready([0], 10, 0)] == [C, B]
    assert executor.undelivered(0) == 0
    assert executor.undelivered(1) == 0


# malformed entries met by read_ready


@pytest.mark.parametrize(
    ("fields", "want_dead_member"),
    [
        pytest.param({"d": "0"}, "", id="given_no_member"),
        pytest.param({"m": "garbage", "d": "0"}, "garbage", id="given_undecodable_member"),
        pytest.param({"m": "t/x/not-a-number", "d": "0"}, "t/x/not-a-number", id="given_bad_generation"),
        pytest.param({"m": A.encode(), "d": "two"}, A.encode(), id="given_delivery_count_not_a_number"),
    ],
)
def test_given_malformed_entry_among_good_ones_when_read_then_dead_lettered_and_the_rest_delivered(
    redis_backend: RedisBackend, fields: dict[str, str], want_dead_member: str
) -> None:
    executor = redis_backend.executor
    executor.ensure_group(0)
    executor.index(B, 0, NOW, NOW)
    redis_backend.probe.add_entry(READY, fields)
    executor.index(C, 0, NOW, NOW)
    redis_backend.clock.advance(3)

    entries = executor.read_ready([0], 10, 0)

    assert [(e.member, e.deliveries) for e in entries] == [(B, 0), (C, 0)]
    dead = {"m": want_dead_member, "reason": MALFORMED_REASON, "at": str(NOW + 3)}
    assert redis_backend.state() == state(
        ready=[entry(B), entry(C)],
        pending=[(B, EXECUTOR, 1), (C, EXECUTOR, 1)],
        inflight={B: NOW, C: NOW},
        dead=[dead],
    )
    assert redis_backend.metrics.counts["MalformedEntries"] == 1


def test_given_malformed_entry_whose_member_is_in_flight_when_read_then_taken_out_of_in_flight(
    redis_backend: RedisBackend,
) -> None:
    executor = redis_backend.executor
    executor.ensure_group(0)
    executor.index(A, 0, NOW, NOW)
    redis_backend.probe.add_entry(READY, {"m": A.encode(), "d": "?"})

    assert [e.member for e in executor.read_ready([0], 10, 0)] == [A]

    assert redis_backend.state()["inflight"] == {}  # dead_letter.lua removes the raw member, as in ack


# consumers


def test_given_no_stream_or_group_when_pruned_then_nothing(redis_backend: RedisBackend) -> None:
    assert redis_backend.executor.prune_consumers(0, 0) == 0
    redis_backend.executor.index(A, 0, NOW, NOW)
    assert redis_backend.executor.prune_consumers(0, 0) == 0


def test_given_consumer_holding_entries_when_pruned_at_zero_idle_then_kept_and_empty_ones_go(
    redis_backend: RedisBackend,
) -> None:
    (a,) = ready_and_read(redis_backend, EXECUTOR, A)
    (b,) = ready_and_read(redis_backend, "done", B)
    redis_backend.roles("done").ack(b)

    assert redis_backend.executor.prune_consumers(0, 0) == 1
    assert redis_backend.probe.consumers(READY, GROUP) == {EXECUTOR: 1}
    assert redis_backend.executor.ack(a) is True
