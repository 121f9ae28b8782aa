"""CronIndex contract (cron_claim.lua, cron_advance.lua, cron_set.lua), fake and real alike."""

from __future__ import annotations

from hookline.adapters.redis import keys as redis_keys
from hookline.domain.cron.schedule import ScheduleMember
from hookline.domain.delivery import CronClaim, CronClaimResult
from tests.contract.conftest import RedisBackend

A = ScheduleMember("t", "A", 1)
A2 = ScheduleMember("t", "A", 2)
B = ScheduleMember("t", "B", 1)
C = ScheduleMember("t", "C", 3)
NOW = 100_000
UNTIL = NOW + 10_000


def cron(backend: RedisBackend) -> dict[str, float]:
    """Returns the cron ZSET of shard 0."""
    return backend.probe.zset(redis_keys.cron_key(0))


def claims(backend: RedisBackend) -> dict[str, str]:
    """Returns the claims hash of shard 0."""
    return backend.probe.hash(redis_keys.cron_claims_key(0))


def wake(backend: RedisBackend) -> int:
    """Returns shard 0's wake tokens."""
    return backend.probe.list_length(redis_keys.wake_key(0))


def seed(backend: RedisBackend, scores: dict[ScheduleMember, int]) -> None:
    """Sets members through cron_set and drops the wake tokens that made."""
    for member, fire in scores.items():
        backend.executor.set_cron(0, None, member, fire)
    while backend.executor.poll_wake([0]):
        pass


def test_given_empty_cron_when_set_then_written_with_a_wake_and_later_ones_do_not_wake_again(
    redis_backend: RedisBackend,
) -> None:
    index = redis_backend.executor

    assert index.set_cron(0, None, A, NOW) is True
    assert index.set_cron(0, None, B, NOW + 1) is True

    assert cron(redis_backend) == {A.encode(): NOW, B.encode(): NOW + 1}
    assert wake(redis_backend) == 1


def test_given_due_and_later_schedules_when_claimed_then_due_ones_in_fire_order_until_expiry(
    redis_backend: RedisBackend,
) -> None:
    seed(redis_backend, {A: NOW, B: NOW - 5_000, C: NOW + 60_000})

    result = redis_backend.executor.claim_cron(0, NOW, UNTIL, 10)

    assert result == CronClaimResult([CronClaim(B, NOW - 5_000, UNTIL), CronClaim(A, NOW, UNTIL)], UNTIL)
    assert cron(redis_backend) == {A.encode(): UNTIL, B.encode(): UNTIL, C.encode(): NOW + 60_000}
    assert claims(redis_backend) == {A.encode(): str(NOW), B.encode(): str(NOW - 5_000)}


def test_given_more_due_than_batch_when_claimed_then_batch_and_next_is_the_earliest_left(
    redis_backend: RedisBackend,
) -> None:
    seed(redis_backend, {A: 1_000, B: 2_000, C: 3_000})

    result = redis_backend.executor.claim_cron(0, NOW, UNTIL, 2)

    assert result == CronClaimResult([CronClaim(A, 1_000, UNTIL), CronClaim(B, 2_000, UNTIL)], 3_000)


def test_given_nothing_due_when_claimed_then_nothing_and_next_fire(redis_backend: RedisBackend) -> None:
    seed(redis_backend, {A: NOW + 1})

    assert redis_backend.executor.claim_cron(0, NOW, UNTIL, 10) == CronClaimResult([], NOW + 1)
    assert redis_backend.executor.claim_cron(1, NOW, UNTIL, 10) == CronClaimResult([], None)


def test_given_claim_expired_when_claimed_again_then_the_same_occurrence(redis_backend: RedisBackend) -> None:
    seed(redis_backend, {A: NOW})
    redis_backend.executor.claim_cron(0, NOW, UNTIL, 10)  # ...and that promoter dies

    result = redis_backend.executor.claim_cron(0, UNTIL, UNTIL + 10_000, 10)

    assert result.claims == [CronClaim(A, NOW, UNTIL + 10_000)]


def test_given_claim_held_when_advanced_then_moved_on_and_claim_cleared(redis_backend: RedisBackend) -> None:
    seed(redis_backend, {A: NOW, B: NOW})
    claim_a, claim_b = redis_backend.executor.claim_cron(0, NOW, UNTIL, 10).claims

    assert redis_backend.executor.advance_cron(0, claim_a, NOW + 60_000) is True
    assert redis_backend.executor.advance_cron(0, claim_b, None) is True
    assert cron(redis_backend) == {A.encode(): NOW + 60_000}
    assert claims(redis_backend) == {}


def test_given_claim_taken_over_when_late_promoter_advances_then_refused_and_unchanged(
    redis_backend: RedisBackend,
) -> None:
    seed(redis_backend, {A: NOW})
    (late,) = redis_backend.executor.claim_cron(0, NOW, UNTIL, 10).claims
    (current,) = redis_backend.executor.claim_cron(0, UNTIL, UNTIL + 10_000, 10).claims

    assert redis_backend.executor.advance_cron(0, late, NOW + 60_000) is False
    assert cron(redis_backend) == {A.encode(): UNTIL + 10_000}
    assert claims(redis_backend) == {A.encode(): str(NOW)}
    assert redis_backend.executor.advance_cron(0, current, NOW + 60_000) is True


def test_given_schedule_gone_when_advanced_then_refused(redis_backend: RedisBackend) -> None:
    seed(redis_backend, {A: NOW})
    (claim,) = redis_backend.executor.claim_cron(0, NOW, UNTIL, 10).claims
    redis_backend.executor.set_cron(0, A, None, None)

    assert redis_backend.executor.advance_cron(0, claim, NOW + 60_000) is False
    assert cron(redis_backend) == {}
    assert claims(redis_backend) == {}


def test_given_claimed_version_when_replaced_by_new_version_then_old_and_its_claim_go(
    redis_backend: RedisBackend,
) -> None:
    seed(redis_backend, {A: NOW, B: NOW + 50_000})
    redis_backend.executor.claim_cron(0, NOW, UNTIL, 10)

    assert redis_backend.executor.set_cron(0, A, A2, NOW + 30_000) is True

    assert cron(redis_backend) == {A2.encode(): NOW + 30_000, B.encode(): NOW + 50_000}
    assert claims(redis_backend) == {}
    assert wake(redis_backend) == 1  # the old version goes first: the new one is earlier than every other


def test_given_member_present_when_set_only_if_absent_then_refused_and_claim_kept(
    redis_backend: RedisBackend,
) -> None:
    seed(redis_backend, {A: NOW})
    redis_backend.executor.claim_cron(0, NOW, UNTIL, 10)

    assert redis_backend.executor.set_cron(0, None, A, NOW + 60_000, only_if_absent=True) is False
    assert cron(redis_backend) == {A.encode(): UNTIL}
    assert claims(redis_backend) == {A.encode(): str(NOW)}


def test_given_member_present_when_set_again_then_rescored_and_claim_dropped(
    redis_backend: RedisBackend,
) -> None:
    seed(redis_backend, {A: NOW})
    redis_backend.executor.claim_cron(0, NOW, UNTIL, 10)

    assert redis_backend.executor.set_cron(0, A, A, NOW + 60_000) is True
    assert cron(redis_backend) == {A.encode(): NOW + 60_000}
    assert claims(redis_backend) == {}


def test_given_pause_or_end_when_set_without_new_fire_then_old_removed_and_false(
    redis_backend: RedisBackend,
) -> None:
    seed(redis_backend, {A: NOW, B: NOW})

    assert redis_backend.executor.set_cron(0, A, None, NOW) is False
    assert redis_backend.executor.set_cron(0, B, B, None) is False
    assert cron(redis_backend) == {}


def test_given_members_when_scored_then_present_ones_have_their_score(redis_backend: RedisBackend) -> None:
    seed(redis_backend, {A: NOW, C: NOW + 7})

    assert redis_backend.executor.cron_scores(0, [A, B, C]) == [NOW, None, NOW + 7]
    assert redis_backend.executor.cron_scores(0, []) == []
