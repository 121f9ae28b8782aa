"""ReadyStream contract (XREADGROUP, ack.lua, defer.lua, dead_letter.lua, consumers), fake and real alike.

Re-delivery (redeliver.lua) has its own module, test_redeliver.py; in-place claims (claim_idle.lua) are here.
"""

from __future__ import annotations

import pytest

from hookline.adapters.redis import keys as redis_keys
from hookline.domain.delivery import StreamEntry
from hookline.domain.models import Member
from tests.contract.conftest import EXECUTOR, GROUP, REAPER, RedisBackend
from tests.contract.redis_cases import NOW, A, B, C, F, entry, state

READY = redis_keys.ready_stream(0)


def ready_now(backend: RedisBackend, *members_and_shards: tuple[Member, int]) -> None:
    """Indexes members due now (straight onto their shard's ready stream)."""
    for member, shard in members_and_shards:
        backend.executor.index(member, shard, NOW, NOW)


def read_one(backend: RedisBackend) -> StreamEntry:
    """Indexes A due now and reads it as the executor; returns the delivery."""
    backend.executor.ensure_group(0)
    backend.executor.index(A, 0, NOW, NOW)
    (delivery,) = backend.executor.read_ready([0], 10, 0)
    return delivery


def test_given_new_entries_when_read_then_each_delivered_once_in_order_and_pending(
    redis_backend: RedisBackend,
) -> None:
    executor = redis_backend.executor
    executor.ensure_group(0)
    ready_now(redis_backend, (A, 0), (B, 0), (F, 0))

    first = executor.read_ready([0], 2, 0)
    second = executor.read_ready([0], 2, 0)
    third = executor.read_ready([0], 2, 0)

    assert [(e.shard, e.member, e.deliveries) for e in first] == [(0, A, 0), (0, B, 0)]
    assert [(e.shard, e.member, e.deliveries) for e in second] == [(0, F, 0)]
    assert third == []
    assert [e.entry_id for e in first + second] == [i for i, _ in redis_backend.probe.stream(READY)]
    assert redis_backend.state()["pending"] == [
        (A.encode(), EXECUTOR, 1),
        (B.encode(), EXECUTOR, 1),
        (F.encode(), EXECUTOR, 1),
    ]


def test_given_entries_on_two_shards_when_read_then_count_applies_per_stream(
    redis_backend: RedisBackend,
) -> None:
    executor = redis_backend.executor
    for shard in (0, 1):
        executor.ensure_group(shard)
    ready_now(redis_backend, (A, 0), (B, 1), (C, 1))

    entries = executor.read_ready([0, 1], 1, 0)

    assert [(e.shard, e.member) for e in entries] == [(0, A), (1, B)]


def test_given_entries_read_by_one_consumer_when_another_reads_then_it_gets_only_new_ones(
    redis_backend: RedisBackend,
) -> None:
    executor, other = redis_backend.executor, redis_backend.roles("other")
    executor.ensure_group(0)
    ready_now(redis_backend, (A, 0))
    executor.read_ready([0], 10, 0)
    ready_now(redis_backend, (B, 0))

    assert [e.member for e in other.read_ready([0], 10, 0)] == [B]
    assert redis_backend.state()["pending"] == [(A.encode(), EXECUTOR, 1), (B.encode(), "other", 1)]


def test_given_stream_without_group_when_read_then_nothing_and_group_made_from_the_start(
    redis_backend: RedisBackend,
) -> None:
    executor = redis_backend.executor
    ready_now(redis_backend, (A, 0))  # the stream exists, its group does not (Redis lost it, or first use)

    assert executor.read_ready([0], 10, 0) == []
    assert [e.member for e in executor.read_ready([0], 10, 0)] == [A]


def test_given_group_exists_when_ensured_again_then_nothing_changes(redis_backend: RedisBackend) -> None:
    delivery = read_one(redis_backend)

    redis_backend.executor.ensure_group(0)

    assert redis_backend.executor.read_ready([0], 10, 0) == []
    assert redis_backend.state() == state(ready=[entry(A)], pending=[(A, EXECUTOR, 1)], inflight={A: NOW}), (
        delivery
    )


def test_given_pending_entry_when_acked_then_gone_everywhere_and_second_ack_changes_nothing(
    redis_backend: RedisBackend,
) -> None:
    delivery = read_one(redis_backend)

    assert redis_backend.executor.ack(delivery) is True
    assert redis_backend.state() == state()
    assert redis_backend.executor.ack(delivery) is False
    assert redis_backend.state() == state()


def test_given_entry_redelivered_when_old_entry_acked_then_false_and_redelivery_stays_inflight(
    redis_backend: RedisBackend,
) -> None:
    old = read_one(redis_backend)
    redis_backend.elapse(60)
    assert redis_backend.reaper.redeliver(0, 50, NOW + 1, 5).redelivered == 1

    assert redis_backend.executor.ack(old) is False
    assert redis_backend.state() == state(ready=[entry(A, 1)], inflight={A: NOW + 1})


def test_given_pending_entries_on_two_shards_when_acked_together_then_each_is_gone_as_by_ack(
    redis_backend: RedisBackend,
) -> None:
    executor = redis_backend.executor
    executor.ensure_group(0)
    executor.ensure_group(1)
    ready_now(redis_backend, (A, 0), (B, 0), (C, 1))
    entries = executor.read_ready([0], 10, 0) + executor.read_ready([1], 10, 0)

    assert executor.ack_many(entries) == 3
    assert redis_backend.state() == state()
    assert redis_backend.state(1) == state()
    assert executor.ack_many(entries) == 0


def test_given_one_entry_redelivered_when_acked_together_then_only_the_others_leave_in_flight(
    redis_backend: RedisBackend,
) -> None:
    old = read_one(redis_backend)
    redis_backend.elapse(60)
    assert redis_backend.reaper.redeliver(0, 50, NOW + 1, 5).redelivered == 1
    ready_now(redis_backend, (B, 0))
    (other,) = [e for e in redis_backend.executor.read_ready([0], 10, 0) if e.member == B]

    assert redis_backend.executor.ack_many([old, other]) == 1
    # A's new entry (the re-delivery) keeps A in flight, as a single ack of the old entry leaves it.
    assert redis_backend.state() == state(
        ready=[entry(A, 1)], pending=[(A, EXECUTOR, 1)], inflight={A: NOW + 1}
    )


def test_given_pending_entry_when_deferred_then_back_in_due_with_a_wake_and_not_in_flight(
    redis_backend: RedisBackend,
) -> None:
    delivery = read_one(redis_backend)

    assert redis_backend.executor.defer(delivery, NOW + 700) is True
    assert redis_backend.state() == state(due={A: NOW + 700}, wake=1)
    assert redis_backend.executor.defer(delivery, NOW + 900) is False
    assert redis_backend.state() == state(due={A: NOW + 700}, wake=1)


def test_given_earlier_member_due_when_deferred_later_then_no_wake(redis_backend: RedisBackend) -> None:
    delivery = read_one(redis_backend)
    redis_backend.executor.index(B, 0, NOW + 100, NOW)
    redis_backend.executor.poll_wake([0])

    assert redis_backend.executor.defer(delivery, NOW + 700) is True
    assert redis_backend.state() == state(due={A: NOW + 700, B: NOW + 100})


def test_given_pending_entry_when_dead_lettered_then_recorded_once_and_finished(
    redis_backend: RedisBackend,
) -> None:
    delivery = read_one(redis_backend)

    dead_id = redis_backend.executor.dead_letter(delivery, "status 404", NOW + 5)
    again = redis_backend.executor.dead_letter(delivery, "status 404", NOW + 6)

    assert dead_id is not None and again is None
    dead = redis_backend.probe.stream(redis_keys.dead_stream(0))
    assert [i for i, _ in dead] == [dead_id]
    assert redis_backend.state() == state(
        dead=[{"m": A.encode(), "reason": "status 404", "at": str(NOW + 5)}]
    )


def test_given_acked_entry_when_dead_lettered_then_nothing_recorded(redis_backend: RedisBackend) -> None:
    delivery = read_one(redis_backend)
    redis_backend.executor.ack(delivery)

    assert redis_backend.executor.dead_letter(delivery, "late", NOW) is None
    assert redis_backend.state() == state()


def test_given_consumers_idle_when_pruned_then_only_those_holding_nothing_go(
    redis_backend: RedisBackend,
) -> None:
    executor, gone = redis_backend.executor, redis_backend.roles("gone")
    executor.ensure_group(0)
    ready_now(redis_backend, (A, 0))
    executor.read_ready([0], 10, 0)  # holds A
    ready_now(redis_backend, (B, 0))
    (b,) = gone.read_ready([0], 10, 0)
    gone.ack(b)
    gone.read_ready([0], 10, 0)  # reads nothing: does not refresh the consumer
    assert redis_backend.probe.consumers(READY, GROUP) == {EXECUTOR: 1, "gone": 0}
    redis_backend.elapse(60)

    assert executor.prune_consumers(0, 10_000) == 0
    assert executor.prune_consumers(0, 50) == 1
    assert redis_backend.probe.consumers(READY, GROUP) == {EXECUTOR: 1}


def test_given_redeliver_that_claims_nothing_then_reaper_is_not_made_a_consumer(
    redis_backend: RedisBackend,
) -> None:
    read_one(redis_backend)

    redis_backend.reaper.redeliver(0, 60_000, NOW, 5)

    assert redis_backend.probe.consumers(READY, GROUP) == {EXECUTOR: 1}
    assert REAPER not in redis_backend.probe.consumers(READY, GROUP)


@pytest.mark.parametrize(
    ("dead", "max_len", "want_removed"),
    [
        pytest.param(3, 5, 0, id="given_fewer_dead_than_max_then_nothing_trimmed"),
        pytest.param(3, 1, 0, id="given_one_partial_node_above_max_then_approximate_trim_keeps_it"),
        pytest.param(3, 0, 3, id="given_max_zero_then_the_whole_node_goes"),
    ],
)
def test_trim_dead(redis_backend: RedisBackend, dead: int, max_len: int, want_removed: int) -> None:
    executor = redis_backend.executor
    executor.ensure_group(0)
    for n in range(dead):
        executor.index(Member("t", f"j{n}", 1), 0, NOW, NOW)
    for delivery in executor.read_ready([0], 10, 0):
        executor.dead_letter(delivery, "x", NOW)

    assert executor.trim_dead(0, max_len) == want_removed
    assert len(redis_backend.probe.stream(redis_keys.dead_stream(0))) == dead - want_removed


def test_given_idle_entries_when_claimed_in_place_then_count_taken_oldest_first_keeping_their_ids(
    redis_backend: RedisBackend,
) -> None:
    executor = redis_backend.executor
    executor.ensure_group(0)
    ready_now(redis_backend, (A, 0), (B, 0))
    read = executor.read_ready([0], 10, 0)
    redis_backend.elapse(60)

    result = redis_backend.reaper.claim_idle(0, 50, NOW + 1, 5, 1)

    assert [(e.entry_id, e.member, e.deliveries) for e in result.claimed] == [(read[0].entry_id, A, 1)]
    assert (result.exhausted, result.malformed) == ([], 0)
    assert redis_backend.state() == state(
        ready=[entry(A), entry(B)],
        pending=[(A, REAPER, 2), (B, EXECUTOR, 1)],
        inflight={A: NOW + 1, B: NOW},
    )


def test_given_idle_entry_out_of_deliveries_when_claimed_in_place_then_exhausted_and_held_by_the_claimer(
    redis_backend: RedisBackend,
) -> None:
    old = read_one(redis_backend)
    redis_backend.elapse(60)

    result = redis_backend.reaper.claim_idle(0, 50, NOW + 1, 1, 5)

    assert (result.claimed, [e.entry_id for e in result.exhausted]) == ([], [old.entry_id])
    assert redis_backend.state() == state(ready=[entry(A)], pending=[(A, REAPER, 2)], inflight={A: NOW})
