"""ExecutorLedger contract (the fan-out's ZSET of started executors, fanout_reserve.lua), fake and real.

Times are the caller's (now_ms); only the key's expiry is Redis's own, and RUN_MS is long enough that it
never passes during a test.
"""

from __future__ import annotations

from hookline.adapters.redis import keys as redis_keys
from tests.contract.conftest import RedisBackend

NOW = 1_000_000
RUN_MS = 90_000
START_MS = 10_000
CEILING = 8
MOST = 5


def reserve(backend: RedisBackend, now_ms: int, wanted: int) -> tuple[int, int]:
    """Reserves launches as a promoter; returns (tokens granted, executors running)."""
    grant = backend.executor.reserve_executors(now_ms, wanted, MOST, CEILING, RUN_MS, START_MS)
    assert len(set(grant.tokens)) == len(grant.tokens)
    return len(grant.tokens), grant.running


def test_given_backlog_when_reserving_then_grants_at_most_per_call_less_those_still_starting(
    redis_backend: RedisBackend,
) -> None:
    assert reserve(redis_backend, NOW, wanted=0) == (0, 0)
    assert reserve(redis_backend, NOW, wanted=7) == (5, 5)  # capped per call
    # Another promoter, a moment later: the five still starting stand for five of the seven wanted.
    assert reserve(redis_backend, NOW + 1, wanted=7) == (2, 7)
    assert reserve(redis_backend, NOW + START_MS - 1, wanted=7) == (0, 7)
    ledger = redis_backend.probe.zset(redis_keys.fan_out_key())
    assert sorted(ledger.values()) == [NOW] * 5 + [NOW + 1] * 2


def test_given_ceiling_reached_when_reserving_then_nothing_until_executors_end_their_run(
    redis_backend: RedisBackend,
) -> None:
    assert reserve(redis_backend, NOW, wanted=5) == (5, 5)
    # Those five have started (and read): the backlog still wants five more, but only three fit.
    assert reserve(redis_backend, NOW + START_MS, wanted=5) == (3, 8)
    assert reserve(redis_backend, NOW + 2 * START_MS, wanted=5) == (0, 8)
    assert reserve(redis_backend, NOW + RUN_MS - 1, wanted=5) == (0, 8)
    # The first five ended their run: room for five again.
    assert reserve(redis_backend, NOW + RUN_MS, wanted=5) == (5, 8)


def test_given_launches_that_failed_when_released_then_they_no_longer_count(
    redis_backend: RedisBackend,
) -> None:
    grant = redis_backend.executor.reserve_executors(NOW, 5, MOST, CEILING, RUN_MS, START_MS)

    redis_backend.executor.release_executors([*grant.tokens[2:], "not-a-token"])

    assert reserve(redis_backend, NOW + 1, wanted=4) == (2, 4)
    assert redis_backend.probe.pttl(redis_keys.fan_out_key()) > 0
