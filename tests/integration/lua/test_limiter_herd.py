"""Limiter herds: many deliveries waiting on one busy key are each refused a small constant number of times.

Each test plays a herd against the real scripts with a simulated clock (the now_ms in their ARGV): every
waiter asks at once, a refused one comes back at the retry_at it was given (plus a random delay, as the
promoter and executor add one), an admitted holder releases after its hold time. Before the waiter queues,
each refused delivery came back every period (or every 200 ms for a semaphore) and was refused again:
the k-th admitted job had been refused about k times.
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections import Counter
from dataclasses import dataclass, field

import pytest
import redis

from hookline.adapters.redis.index import RedisIndex
from hookline.domain.delivery import Slot
from tests.fakes.clock import FrozenClock

pytestmark = pytest.mark.integration

TENANT, NAME = "t", "partner-api"
WAITERS = 200
START_MS = 1_000_000
# Refusals per delivery, whatever its place in the herd. A rate window's slots are known exactly, so a
# waiter is refused when it first asks and when the waiters ahead came late (the random delay) at most.
# A semaphore's are estimates (the typical hold, learnt from releases): the first waiters are told a
# default hold, and a waiter told too early is refused again with a later estimate.
MAX_RATE_REFUSALS = 4
MAX_SLOT_REFUSALS = 8
LEASE_MS = 330_000  # the executor's slot lease: the longest callback timeout and the lease margin


@dataclass
class Herd:
    """What a simulated herd did."""

    refusals: Counter[str] = field(default_factory=Counter)
    spans: list[tuple[int, int]] = field(default_factory=list)  # (admitted, released) per delivery
    calls: int = 0

    def check_bounded(self) -> None:
        assert self.calls <= 20 * WAITERS, "the herd did not settle"


def _waiter(i: int) -> str:
    return f"job{i:04d}:1"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_given_200_waiters_on_a_rate_of_one_per_second_then_each_is_refused_a_few_times_at_most(
    redis_client: redis.Redis, seed: int
) -> None:
    index = RedisIndex(redis_client)
    rng = random.Random(seed)
    period_ms = 1_000
    herd = Herd()
    arrivals = [(START_MS, i, _waiter(i)) for i in range(WAITERS)]
    while arrivals:
        now_ms, seq, waiter = heapq.heappop(arrivals)
        herd.calls += 1
        herd.check_bounded()
        verdict = index.admit_rate(TENANT, NAME, now_ms, 1, period_ms, f"entry-{herd.calls}", waiter=waiter)
        if verdict.admitted:
            herd.spans.append((now_ms, now_ms))
        else:
            herd.refusals[waiter] += 1
            heapq.heappush(arrivals, (verdict.retry_at_ms + rng.randrange(30), seq, waiter))

    admitted = sorted(start for start, _ in herd.spans)
    assert len(admitted) == WAITERS
    assert all(later - earlier >= period_ms for earlier, later in itertools.pairwise(admitted))
    assert max(herd.refusals.values()) <= MAX_RATE_REFUSALS, herd.refusals.most_common(3)
    # The limit is used, not just respected: about one admission per period plus the waiters' delays.
    assert admitted[-1] - START_MS <= WAITERS * (period_ms + 30)


@pytest.mark.parametrize(
    ("seed", "hold_ms"),
    [
        pytest.param(1, (100, 100), id="hold_shorter_than_the_default"),
        pytest.param(2, (50, 150), id="hold_varying_around_the_default"),
        pytest.param(3, (2_000, 2_000), id="hold_ten_times_the_default"),
        pytest.param(4, (800, 1_200), id="hold_varying_by_a_fifth"),
    ],
)
def test_given_200_waiters_on_a_semaphore_of_one_then_each_is_refused_a_few_times_at_most(
    redis_client: redis.Redis, seed: int, hold_ms: tuple[int, int]
) -> None:
    clock = FrozenClock(START_MS)
    index = RedisIndex(redis_client, clock=clock)
    rng = random.Random(seed)
    herd = Herd()
    release, arrive = 0, 1  # at equal times a release comes first
    events = [(START_MS, arrive, i, _waiter(i)) for i in range(WAITERS)]
    while events:
        now_ms, kind, seq, waiter = heapq.heappop(events)
        clock.set(now_ms)
        slot = Slot(TENANT, NAME, waiter)
        if kind == release:
            index.release_slots([slot])
            continue
        herd.calls += 1
        herd.check_bounded()
        verdict = index.acquire_slot(slot, now_ms, 1, now_ms + LEASE_MS)
        if verdict.admitted:
            done_ms = now_ms + rng.randint(*hold_ms)
            herd.spans.append((now_ms, done_ms))
            heapq.heappush(events, (done_ms, release, seq, waiter))
        else:
            herd.refusals[waiter] += 1
            heapq.heappush(events, (verdict.retry_at_ms + rng.randrange(30), arrive, seq, waiter))

    spans = sorted(herd.spans)
    assert len(spans) == WAITERS
    assert all(later[0] >= earlier[1] for earlier, later in itertools.pairwise(spans))
    assert max(herd.refusals.values()) <= MAX_SLOT_REFUSALS, herd.refusals.most_common(3)
    # The semaphore stays busy: idle gaps between holders add up to well under the time spent holding.
    held = sum(end - start for start, end in spans)
    assert spans[-1][1] - START_MS <= 2.5 * held
