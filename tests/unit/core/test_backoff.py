"""Retry delays: exponential with full jitter, a floor, a cap, and Retry-After as a floor up to that cap."""

from __future__ import annotations

import random

import pytest

from hookline.domain.backoff import retry_delay_ms


@pytest.mark.parametrize("attempt", [1, 2, 3, 5, 10, 60])
def test_given_attempt_when_jittered_then_between_floor_and_exponential_ceiling(attempt: int) -> None:
    rng = random.Random(attempt)
    ceiling = min(60_000, 1_000 * 2 ** (attempt - 1))

    delays = [retry_delay_ms(attempt, 1_000, 60_000, None, rng) for _ in range(500)]

    assert all(1_000 <= d <= ceiling for d in delays)
    if ceiling >= 4_000:  # jitter spreads retries: not all at the ceiling, not all at the floor
        assert min(delays) < ceiling / 2 < max(delays)


def test_given_retry_after_within_the_max_backoff_when_longer_than_the_jitter_then_it_wins() -> None:
    rng = random.Random(0)
    assert retry_delay_ms(1, 1_000, 60_000, 30.0, rng) == 30_000
    assert retry_delay_ms(1, 1_000, 86_400_000, 10 * 86_400.0, rng) == 86_400_000  # and a day caps it


def test_given_retry_after_past_the_jobs_max_backoff_when_computed_then_the_max_backoff_wins() -> None:
    # The submitter's max_backoff_s is the longest a job waits between attempts; a receiver cannot extend it.
    rng = random.Random(0)
    assert retry_delay_ms(1, 1_000, 2_000, 30.0, rng) == 2_000
    assert retry_delay_ms(1, 1_000, 2_000, 10 * 86_400.0, rng) == 2_000


def test_given_retry_after_shorter_than_floor_when_computed_then_floor_wins() -> None:
    assert retry_delay_ms(1, 5_000, 10_000, 1.0, random.Random(0)) == 5_000


def test_given_non_finite_retry_after_when_computed_then_nan_ignored_and_infinity_capped() -> None:
    # NaN would pass min() untouched and crash int(): no Retry-After may stop a retry being scheduled.
    assert retry_delay_ms(1, 1_000, 1_000, float("nan"), random.Random(0)) == 1_000
    assert retry_delay_ms(1, 1_000, 1_000, float("inf"), random.Random(0)) == 1_000
    assert retry_delay_ms(1, 1_000, 90_000_000, float("inf"), random.Random(0)) == 86_400_000
