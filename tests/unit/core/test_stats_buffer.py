"""The executor's statistics buffer: outcomes added up per tenant, minute and outcome, written together."""

from __future__ import annotations

from hookline.domain.stats import BUCKET_MS, Outcome, Tally
from hookline.usecases.stats_buffer import StatsBuffer
from tests.fakes.stats import RecordingStats

MINUTE = 29_000_000


def test_given_outcomes_when_flushed_then_they_are_added_up_per_tenant_minute_and_outcome_in_one_call() -> (
    None
):
    inner = RecordingStats()
    buffer = StatsBuffer(inner)
    at = MINUTE * BUCKET_MS

    buffer.record("a", Outcome.SUCCEEDED, at + 1, lag_ms=10)
    buffer.record("a", Outcome.SUCCEEDED, at + 2, lag_ms=-5)  # early never counts below zero
    buffer.record("a", Outcome.RETRIED, at + 3, lag_ms=7)
    buffer.record("b", Outcome.SUCCEEDED, at + 4)
    buffer.record("a", Outcome.SUCCEEDED, at + BUCKET_MS, lag_ms=1)  # the next minute
    assert inner.tallies == []  # nothing written before the flush

    assert buffer.flush() == 5

    (tallies,) = inner.tallies
    assert sorted(tallies, key=lambda t: (t.tenant, t.minute, t.outcome)) == [
        Tally("a", MINUTE, Outcome.RETRIED, 1, 7, 1),
        Tally("a", MINUTE, Outcome.SUCCEEDED, 2, 10, 2),
        Tally("a", MINUTE + 1, Outcome.SUCCEEDED, 1, 1, 1),
        Tally("b", MINUTE, Outcome.SUCCEEDED, 1, 0, 0),
    ]
    assert inner.records == []


def test_given_a_flush_when_flushed_again_then_nothing_is_written_twice() -> None:
    inner = RecordingStats()
    buffer = StatsBuffer(inner)
    buffer.record("a", Outcome.SUCCEEDED, MINUTE * BUCKET_MS)
    buffer.flush()

    assert buffer.flush() == 0
    assert len(inner.tallies) == 1


def test_given_a_dead_job_with_its_id_when_recorded_then_it_goes_to_the_recorder_at_once() -> None:
    inner = RecordingStats()
    buffer = StatsBuffer(inner)

    buffer.record("a", Outcome.DEAD, 5, job_id="j1", lag_ms=3)

    # The dead-letter set names the job: it cannot be added up with others.
    assert inner.records == [("a", Outcome.DEAD, 5, "j1", 3)]
    assert buffer.flush() == 0
