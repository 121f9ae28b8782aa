"""The Redis circuit: once Redis failed, the steps with a fallback take it without asking Redis, and one
probe a period asks again (usecases/circuit.py); with it, a submit during an outage notes its job at once."""

from __future__ import annotations

from hookline.domain.models import JobRequest
from hookline.domain.stats import Outcome
from hookline.usecases.circuit import Circuit, CircuitStats
from hookline.usecases.submit import JobSubmitter
from tests.fakes.clock import FrozenClock
from tests.fakes.metrics import RecordingMetrics
from tests.fakes.stats import RecordingStats
from tests.unit.usecases.world import TENANT, URL, World

OPEN_MS = 1_000
NOW = 1_767_225_600_000


def test_given_redis_answering_when_asked_then_every_caller_may_ask_it() -> None:
    circuit = Circuit(FrozenClock(NOW), RecordingMetrics(), OPEN_MS)

    assert [circuit.allows() for _ in range(3)] == [True, True, True]
    assert not circuit.is_open


def test_given_a_failure_when_asked_within_the_open_time_then_no_caller_asks_redis() -> None:
    clock, metrics = FrozenClock(NOW), RecordingMetrics()
    circuit = Circuit(clock, metrics, OPEN_MS)

    circuit.failed()
    clock.advance(OPEN_MS - 1)

    assert [circuit.allows() for _ in range(3)] == [False, False, False]
    assert circuit.is_open
    assert metrics.counts["RedisCircuitOpened"] == 1


def test_given_the_open_time_over_when_asked_then_one_probe_goes_and_the_others_fall_back() -> None:
    clock = FrozenClock(NOW)
    circuit = Circuit(clock, RecordingMetrics(), OPEN_MS)
    circuit.failed()
    clock.advance(OPEN_MS)

    assert [circuit.allows() for _ in range(3)] == [True, False, False]


def test_given_a_failed_probe_when_asked_then_open_for_another_period_and_a_success_closes_it() -> None:
    clock, metrics = FrozenClock(NOW), RecordingMetrics()
    circuit = Circuit(clock, metrics, OPEN_MS)
    circuit.failed()
    clock.advance(OPEN_MS)
    assert circuit.allows()

    circuit.failed()
    clock.advance(OPEN_MS - 1)
    assert not circuit.allows()
    clock.advance(1)
    assert circuit.allows()
    circuit.succeeded()

    assert not circuit.is_open
    assert [circuit.allows() for _ in range(2)] == [True, True]
    assert metrics.counts["RedisCircuitOpened"] == 1  # one outage, however many probes


def test_given_an_open_circuit_when_counting_then_the_counts_are_dropped_until_it_closes() -> None:
    circuit = Circuit(FrozenClock(NOW), RecordingMetrics(), OPEN_MS)
    recorded = RecordingStats()
    stats = CircuitStats(recorded, circuit)

    circuit.failed()
    stats.record(TENANT, Outcome.SUBMITTED, NOW)
    stats.record_tallies([])
    circuit.succeeded()
    stats.record(TENANT, Outcome.SUBMITTED, NOW + 1)

    assert recorded.records == [(TENANT, Outcome.SUBMITTED, NOW + 1, None, None)]
    assert recorded.tallies == []


def submitter(world: World, circuit: Circuit) -> JobSubmitter:
    return JobSubmitter(
        world.store,
        world.index,
        world.clock,
        lambda url: None,
        world.shards,
        world.metrics,
        unindexed=world.unindexed,
        circuit=circuit,
    )


def test_given_redis_down_when_jobs_are_submitted_then_only_the_first_asks_redis_and_every_one_is_noted(
    world: World,
) -> None:
    world.index.faults.fail_next("index", times=100)
    circuit = Circuit(world.clock, world.metrics, OPEN_MS)
    submit = submitter(world, circuit)

    jobs = [submit.submit(TENANT, JobRequest(url=URL, delay_s=30)).job for _ in range(5)]

    # The first submit paid the client's retries; the next four took the note at once.
    assert world.index.faults.calls("index") == 1
    assert (world.metrics.counts["IndexFailed"], world.metrics.counts["IndexSkipped"]) == (1, 4)
    noted = {job.member.job_id for note in world.unindexed.unindexed([0]) for job in note.jobs}
    assert noted == {job.job_id for job in jobs}


def test_given_redis_back_when_the_probe_indexes_then_later_submits_index_again(world: World) -> None:
    world.index.faults.fail_next("index")
    circuit = Circuit(world.clock, world.metrics, OPEN_MS)
    submit = submitter(world, circuit)
    submit.submit(TENANT, JobRequest(url=URL, delay_s=30))
    world.clock.advance(OPEN_MS)

    probe = submit.submit(TENANT, JobRequest(url=URL, delay_s=30)).job
    after = submit.submit(TENANT, JobRequest(url=URL, delay_s=30)).job

    assert world.index.faults.calls("index") == 3
    assert not circuit.is_open
    noted = {job.member.job_id for note in world.unindexed.unindexed([0]) for job in note.jobs}
    assert probe.job_id not in noted and after.job_id not in noted
