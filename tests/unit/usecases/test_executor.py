"""Executor on fakes: every outcome of a delivery, and the failures it must survive, state checked after each.

The clock is frozen at T0 unless a test moves it; a job times out after 5 s and a claim holds it for LEASE_MS
(world.TIMING), so a claim at T0 holds the job until LEASE_END. The heartbeat never beats here (see
world.py): an attempt that the test stalls past REDELIVER_AFTER_MS and LEASE_MS can be taken over, as a
stalled executor's. Retries wait exactly BACKOFF_S (min = max backoff).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from hookline.adapters.dynamo.transactions import ATTEMPTS, CONDITION_FAILED
from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.limiters import DEFAULT_HOLD_MS
from hookline.domain.callbacks import CallbackRequest, CallbackResult
from hookline.domain.models import ExecutionOutcome, Job, JobStatus, Member
from hookline.usecases.execute import Disposition
from tests.fakes.callbacks import Step, ok, response, timeout, unsafe_url
from tests.fakes.faults import DynamoUnavailable, ScriptError, redis_down
from tests.unit.usecases.world import (
    BACKOFF_S,
    LEASE_MS,
    MAX_DELIVERIES,
    REDELIVER_AFTER_MS,
    T0,
    TENANT,
    URL,
    World,
    entry,
    idle_state,
    member,
)

LEASE_END = T0 + LEASE_MS  # a claim at T0 holds the job until then


def during(action: Callable[[], None], result: CallbackResult) -> Step:
    """Returns a callback step that runs action while the callback is in flight, then answers result."""

    def step(request: CallbackRequest) -> CallbackResult:
        action()
        return result

    return step


def attempts(world: World, job: Job) -> list[tuple[int, ExecutionOutcome, int | None, str | None]]:
    """Returns the recorded attempts of job as (attempt, outcome, status code, error class)."""
    return [
        (e.attempt, e.outcome, e.status_code, e.error_class)
        for e in world.store.executions(TENANT, job.job_id)
    ]


def attempt_headers(world: World) -> list[str]:
    """Returns the Hookline-Attempt header of every callback made, sorted."""
    return sorted(r.headers["Hookline-Attempt"] for r in world.callbacks.requests)


# Outcomes of one delivery.


def test_given_ready_job_when_callback_succeeds_then_succeeded_and_nothing_left_in_redis(
    world: World,
) -> None:
    job = world.submit()

    assert world.drain() == [Disposition.SUCCEEDED]

    after = world.job(job)
    assert (after.status, after.generation, after.attempt) == (JobStatus.SUCCEEDED, 1, 1)
    assert (after.last_status_code, after.last_error, after.lease_expires_at_ms) == (200, None, None)
    assert attempts(world, job) == [(1, ExecutionOutcome.SUCCEEDED, 200, None)]
    assert world.state() == idle_state()
    (request,) = world.callbacks.requests
    assert (request.url, request.method, request.body, request.timeout_s) == (URL, "POST", b'{"n":1}', 5.0)
    assert request.headers["webhook-id"] == job.job_id
    assert request.headers["Hookline-Attempt"] == "1"
    assert request.headers["webhook-signature"].startswith("v1,")
    assert world.metrics.counts["Succeeded"] == 1


# A job's longest wait between attempts: a receiver's Retry-After is honoured up to it.
MAX_BACKOFF_S = 3_600


@pytest.mark.parametrize(
    ("result", "want_delay_ms", "want_code", "want_error"),
    [
        pytest.param(response(500), 1_000, 500, "status 500", id="given_500_then_retried_after_backoff"),
        pytest.param(
            response(429, retry_after_s=120),
            120_000,
            429,
            "status 429",
            id="given_429_then_after_its_retry_after",
        ),
        pytest.param(
            response(503, retry_after_s=0.2),
            1_000,
            503,
            "status 503",
            id="given_short_retry_after_then_backoff_wins",
        ),
        pytest.param(
            response(429, retry_after_s=7_200),
            MAX_BACKOFF_S * 1000,
            429,
            "status 429",
            id="given_retry_after_past_the_max_backoff_then_the_max_backoff_wins",
        ),
        pytest.param(timeout(5), 1_000, None, "timeout", id="given_timeout_then_retried_after_backoff"),
    ],
)
def test_given_retryable_failure_when_attempts_remain_then_next_generation_waits_in_due_index(
    world: World, result: CallbackResult, want_delay_ms: int, want_code: int | None, want_error: str
) -> None:
    world.callbacks.then(result)
    job = world.submit(max_backoff_s=MAX_BACKOFF_S)

    assert world.drain() == [Disposition.RETRIED]

    after = world.job(job)
    assert (after.status, after.generation, after.attempt, after.due_ms) == (
        JobStatus.SCHEDULED,
        2,
        1,
        T0 + want_delay_ms,
    )
    assert (after.last_status_code, after.last_error, after.lease_expires_at_ms) == (
        want_code,
        want_error,
        None,
    )
    assert [(a, o) for a, o, _, _ in attempts(world, job)] == [(1, ExecutionOutcome.RETRYABLE)]
    assert world.state() == idle_state(due={member(job, 2): T0 + want_delay_ms}, wake=1)


def test_given_retry_waiting_when_due_then_promoted_then_delivered_as_attempt_two(world: World) -> None:
    world.callbacks.then(response(500))
    job = world.submit()
    world.drain()
    promoter = world.promoter()

    world.clock.advance(999)
    assert promoter.tick().moved == 0  # never early
    world.clock.advance(1)
    assert promoter.tick().moved == 1
    assert world.drain() == [Disposition.SUCCEEDED]

    after = world.job(job)
    assert (after.status, after.generation, after.attempt) == (JobStatus.SUCCEEDED, 2, 2)
    assert attempts(world, job) == [
        (1, ExecutionOutcome.RETRYABLE, 500, None),
        (2, ExecutionOutcome.SUCCEEDED, 200, None),
    ]
    assert attempt_headers(world) == ["1", "2"]
    assert world.state() == idle_state(wake=1)  # the token a sleeping promoter would take


@pytest.mark.parametrize(
    ("result", "want_reason"),
    [
        pytest.param(response(404), "status 404", id="given_404_then_dead_at_once"),
        pytest.param(unsafe_url(), "unsafe_url", id="given_unsafe_address_at_delivery_then_dead_at_once"),
    ],
)
def test_given_permanent_failure_then_dead_and_on_the_dead_stream(
    world: World, result: CallbackResult, want_reason: str
) -> None:
    world.callbacks.then(result)
    job = world.submit(max_attempts=5)

    assert world.drain() == [Disposition.DEAD]

    after = world.job(job)
    assert (after.status, after.generation, after.attempt, after.last_error) == (
        JobStatus.DEAD,
        1,
        1,
        want_reason,
    )
    assert world.state() == idle_state(dead=[{"m": member(job), "reason": want_reason, "at": str(T0)}])
    assert [o for _, o, _, _ in attempts(world, job)] == [ExecutionOutcome.PERMANENT]


def test_given_last_attempt_fails_retryably_then_dead(world: World) -> None:
    world.callbacks.then(response(500), response(502))
    job = world.submit(max_attempts=2)
    world.drain()
    world.clock.advance(1_000)
    world.promoter().tick()

    assert world.drain() == [Disposition.DEAD]

    after = world.job(job)
    assert (after.status, after.generation, after.attempt, after.last_error) == (
        JobStatus.DEAD,
        2,
        2,
        "status 502",
    )
    assert world.state() == idle_state(
        wake=1, dead=[{"m": member(job, 2), "reason": "status 502", "at": str(T0 + 1_000)}]
    )


# Deliveries that must not run.


def test_given_entry_of_an_older_generation_when_read_then_dropped_without_a_callback(world: World) -> None:
    world.callbacks.then(response(500))
    job = world.submit()
    world.drain()
    world.index.index(
        job.member(), job.shard, T0, T0
    )  # generation 1 again (a reconciliation racing the retry)

    assert world.drain() == [Disposition.STALE]

    assert world.job(job).generation == 2
    assert len(world.callbacks.requests) == 1
    assert world.state() == idle_state(due={member(job, 2): T0 + 1_000}, wake=1)


def test_given_job_cancelled_after_promotion_when_read_then_dropped_and_never_called(world: World) -> None:
    job = world.submit()
    world.manager().cancel(TENANT, job.job_id)  # too late to unindex: it is on the ready stream

    assert world.drain() == [Disposition.STALE]

    assert world.job(job).status is JobStatus.CANCELLED
    assert world.callbacks.requests == []
    assert world.state() == idle_state()


def test_given_rate_window_full_when_read_then_deferred_without_spending_an_attempt(world: World) -> None:
    rate = {"key": "partner", "limit": 1, "period_s": 10}
    first, second = world.submit(rate_limit=rate), world.submit(rate_limit=rate)

    assert world.drain() == [Disposition.SUCCEEDED, Disposition.DEFERRED]

    waiting = world.job(second)
    assert (waiting.status, waiting.generation, waiting.attempt) == (JobStatus.SCHEDULED, 1, 0)
    assert world.state() == idle_state(due={member(second): T0 + 10_000}, wake=1)
    world.clock.advance(10_000)
    world.promoter().tick()
    assert world.drain() == [Disposition.SUCCEEDED]
    assert [world.job(j).attempt for j in (first, second)] == [1, 1]


def test_given_concurrency_slot_taken_when_read_then_deferred_briefly_and_slot_freed_after(
    world: World,
) -> None:
    pool = {"key": "pool", "limit": 1}
    first = world.submit(max_concurrency=pool)
    seen: dict[str, object] = {}

    def second_arrives() -> None:
        seen["second"] = world.submit(max_concurrency=pool)
        seen["dispositions"] = world.drain("other")

    world.callbacks.then(during(second_arrives, ok()))

    assert world.drain() == [Disposition.SUCCEEDED]

    second = seen["second"]
    assert isinstance(second, Job)
    assert seen["dispositions"] == [Disposition.DEFERRED]
    assert world.job(first).status is JobStatus.SUCCEEDED
    assert world.job(second).attempt == 0
    assert world.holders(TENANT, "pool") == {}
    # Queued, and told when the holder is expected to end (its start plus the typical hold).
    token = f"{second.job_id}:1"
    assert world.memory.zset(redis_keys.concurrency_queue_key(TENANT, "pool")) == {token: 1.0}
    assert world.state() == idle_state(due={member(second): T0 + DEFAULT_HOLD_MS}, wake=1)
    world.clock.advance(DEFAULT_HOLD_MS)
    world.promoter().tick()
    assert world.drain() == [Disposition.SUCCEEDED]
    assert world.memory.zset(redis_keys.concurrency_queue_key(TENANT, "pool")) == {}


# Another attempt took the job over (lost lease).


TAKE_OVER_MS = LEASE_MS + 1_000  # past the lease, and the entry idle past REDELIVER_AFTER_MS


def take_over(world: World, seen: dict[str, object]) -> Callable[[], None]:
    """Returns an action: the attempt stalls, the lease runs out, the reaper re-delivers, executor b claims
    and delivers."""

    def action() -> None:
        world.clock.advance(TAKE_OVER_MS)
        world.reap()
        seen["b"] = world.drain("b")

    return action


def test_given_lease_lost_during_a_slow_callback_when_it_returns_then_the_new_attempt_keeps_the_job(
    world: World,
) -> None:
    seen: dict[str, object] = {}
    world.callbacks.then(during(take_over(world, seen), ok()), ok())
    job = world.submit()

    assert world.drain() == [Disposition.LOST_HOLD]

    assert seen["b"] == [Disposition.SUCCEEDED]
    after = world.job(job)
    assert (after.status, after.generation, after.attempt) == (JobStatus.SUCCEEDED, 1, 2)
    assert attempts(world, job) == [
        (1, ExecutionOutcome.LEASE_EXPIRED, None, "lease_expired"),
        (2, ExecutionOutcome.SUCCEEDED, 200, None),
    ]
    assert attempt_headers(world) == ["1", "2"]
    assert world.state() == idle_state()
    assert world.metrics.counts["LostHold"] == 1


def test_given_lease_lost_when_the_stale_attempt_fails_permanently_then_nothing_is_dead_lettered(
    world: World,
) -> None:
    seen: dict[str, object] = {}
    world.callbacks.then(during(take_over(world, seen), response(404)), ok())
    job = world.submit()

    assert world.drain() == [Disposition.LOST_HOLD]

    assert world.job(job).status is JobStatus.SUCCEEDED
    assert world.state() == idle_state()


def test_given_lease_lost_when_both_attempts_retry_then_the_due_index_keeps_the_new_attempts_time(
    world: World,
) -> None:
    seen: dict[str, object] = {}
    world.callbacks.then(during(take_over(world, seen), response(503)), response(503, retry_after_s=600))
    job = world.submit(max_backoff_s=MAX_BACKOFF_S)

    assert world.drain() == [Disposition.LOST_HOLD]

    after = world.job(job)
    assert seen["b"] == [Disposition.RETRIED]
    assert (after.status, after.generation, after.due_ms) == (
        JobStatus.SCHEDULED,
        2,
        T0 + TAKE_OVER_MS + 600_000,
    )
    # The stale attempt's own retry (503, due after the backoff) never reached the due index.
    assert world.state() == idle_state(due={member(job, 2): after.due_ms}, wake=1)


# The finish transaction cancelled: only a refused condition on the job item is a lost lease. A first
# attempt's finish is one UpdateItem (its record goes into the job item); a later attempt's is a transaction
# with its execution record, so these tests cancel the second attempt's.


def retried_once(world: World) -> tuple[Job, int]:
    """Submits a job whose first attempt answers 503, promotes its retry, and returns the job and the end of
    the lease its second attempt's claim (at the current time) will take."""
    world.callbacks.then(response(503))
    job = world.submit()
    assert world.drain() == [Disposition.RETRIED]
    world.clock.advance(int(BACKOFF_S * 1000))
    assert world.promoter().tick().moved == 1
    return job, world.clock.now_ms() + LEASE_MS


def test_given_a_first_attempt_then_its_finish_is_no_transaction_and_no_cancellation_reaches_it(
    world: World,
) -> None:
    job = world.submit()
    world.store.transactions.plan("ThrottlingError", count=ATTEMPTS)

    assert world.drain() == [Disposition.SUCCEEDED]

    assert world.store.transactions.cancelled == 0
    assert attempts(world, job) == [(1, ExecutionOutcome.SUCCEEDED, 200, None)]
    world.store.transactions.plan("ThrottlingError", count=0)


def test_given_finish_cancelled_transiently_a_few_times_then_retried_and_recorded_once(world: World) -> None:
    job, _ = retried_once(world)
    world.store.transactions.plan("TransactionConflict", count=ATTEMPTS - 1)

    assert world.drain() == [Disposition.SUCCEEDED]

    assert world.store.transactions.cancelled == ATTEMPTS - 1
    assert attempts(world, job) == [
        (1, ExecutionOutcome.RETRYABLE, 503, None),
        (2, ExecutionOutcome.SUCCEEDED, 200, None),
    ]
    assert world.state() == idle_state(wake=1)


def test_given_finish_transaction_cancelled_while_holding_the_job_then_the_outcome_is_not_dropped(
    world: World,
) -> None:
    job, lease_end = retried_once(world)
    world.store.transactions.plan("ThrottlingError", count=ATTEMPTS)

    assert world.drain() == [Disposition.LEFT_PENDING]

    after = world.job(job)
    # Nobody else claimed the job: this attempt still holds it, and its entry stays pending for recovery.
    assert (after.status, after.attempt, after.lease_expires_at_ms) == (JobStatus.RUNNING, 2, lease_end)
    assert world.state()["pending"] == [(member(job, 2), "executor", 1)]
    assert world.metrics.counts["LeftPending"] == 1


def test_given_finish_cancelled_throughout_then_recovered_once_idle_and_taken_over_after_the_lease(
    world: World,
) -> None:
    job, lease_end = retried_once(world)
    world.store.transactions.plan("ThrottlingError", count=ATTEMPTS)
    assert world.drain() == [Disposition.LEFT_PENDING]

    world.clock.advance(REDELIVER_AFTER_MS)
    world.reap()  # the idle entry is re-delivered; its lease still holds, so the claim is put off
    assert world.drain() == [Disposition.DEFERRED]
    assert world.state() == idle_state(due={member(job, 2): lease_end + 1}, wake=1)
    world.clock.set(lease_end + 1)
    world.promoter().tick()
    assert world.drain() == [Disposition.SUCCEEDED]

    after = world.job(job)
    assert (after.status, after.attempt) == (JobStatus.SUCCEEDED, 3)
    assert [o for _, o, _, _ in attempts(world, job)] == [
        ExecutionOutcome.RETRYABLE,
        ExecutionOutcome.LEASE_EXPIRED,
        ExecutionOutcome.SUCCEEDED,
    ]
    assert len(world.callbacks.requests) == 3  # at least once: the receiver saw the second attempt twice
    assert world.state() == idle_state(wake=1)


def test_given_a_redelivered_entry_whose_lease_ends_within_seconds_then_claimed_once_it_ends_not_deferred(
    world: World,
) -> None:
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        world.clock.advance(int(seconds * 1000))

    world.executor(sleep=sleep)
    job, lease_end = retried_once(world)
    world.store.transactions.plan("ThrottlingError", count=ATTEMPTS)
    assert world.drain() == [Disposition.LEFT_PENDING]
    world.store.transactions.plan("ThrottlingError", count=0)

    world.clock.set(lease_end - 2_000)  # idle past REDELIVER_AFTER_MS, the lease 2 s from its end
    world.reap()  # re-delivered while the gone attempt's lease still holds

    assert world.drain() == [Disposition.SUCCEEDED]  # held until the lease ended, then claimed
    assert 2.0 <= sum(slept) <= 2.1
    assert world.job(job).status is JobStatus.SUCCEEDED
    assert world.state() == idle_state(wake=1)  # nothing deferred into the due ZSET


def test_given_finish_refused_by_the_job_items_condition_then_lost_hold_and_acknowledged(
    world: World,
) -> None:
    job, _ = retried_once(world)
    world.store.transactions.plan(CONDITION_FAILED, count=1)

    assert world.drain() == [Disposition.LOST_HOLD]

    assert world.store.transactions.cancelled == 1
    assert world.job(job).status is JobStatus.RUNNING  # as DynamoDB said: another attempt owns it
    assert world.state() == idle_state(wake=1)


# The same member delivered twice.


def test_given_duplicate_entry_read_while_the_first_is_in_flight_then_dropped_and_called_once(
    world: World,
) -> None:
    job = world.submit()
    world.index.index(job.member(), job.shard, T0, T0)  # the same member again
    (first,) = world.executor_redis("a").read_ready([0], 1, 0)
    seen: dict[str, object] = {}
    world.callbacks.then(during(lambda: seen.update(b=world.drain("b")), ok()))

    assert world.executor("a").process(first) is Disposition.SUCCEEDED

    # The copy met the first attempt's lease: put off until it ends (NotYet), then dropped as stale.
    assert seen["b"] == [Disposition.DEFERRED]
    after = world.job(job)
    assert (after.status, after.attempt) == (JobStatus.SUCCEEDED, 1)
    assert world.state() == idle_state(due={member(job): LEASE_END + 1}, wake=1)
    world.clock.set(LEASE_END + 1)
    world.promoter().tick()
    assert world.drain("b") == [Disposition.STALE]
    assert len(world.callbacks.requests) == 1
    assert world.state() == idle_state(wake=1)


def test_given_duplicate_entries_read_after_the_job_finished_then_the_second_is_dropped(world: World) -> None:
    job = world.submit()
    world.index.index(job.member(), job.shard, T0, T0)

    assert world.drain() == [Disposition.SUCCEEDED, Disposition.STALE]

    assert world.job(job).attempt == 1
    assert len(world.callbacks.requests) == 1
    assert world.state() == idle_state()


def test_given_duplicate_entry_of_a_slot_holder_when_put_off_then_the_holder_keeps_its_slot(
    world: World,
) -> None:
    pool = {"key": "pool", "limit": 1}
    job = world.submit(max_concurrency=pool)
    world.index.index(job.member(), job.shard, T0, T0)
    (first,) = world.executor_redis("a").read_ready([0], 1, 0)
    seen: dict[str, object] = {}

    def duplicate_then_another_job() -> None:
        seen["b"] = world.drain("b")
        seen["holders"] = world.holders(TENANT, "pool")
        world.submit(max_concurrency=pool)
        seen["c"] = world.drain("c")

    world.callbacks.then(during(duplicate_then_another_job, ok()))

    world.executor("a").process(first)

    assert seen["b"] == [Disposition.DEFERRED]  # the same token already held the slot: not released
    holders = seen["holders"]
    assert isinstance(holders, dict) and list(holders) == [f"{job.job_id}:1"]
    assert seen["c"] == [Disposition.DEFERRED]  # the key's one slot is still in use
    assert world.holders(TENANT, "pool") == {}  # released once, by its holder


# Redis failing.


@pytest.mark.parametrize(
    ("error", "want", "counted"),
    [
        pytest.param(redis_down, Disposition.LEFT_PENDING, "LeftPending", id="given_redis_unavailable"),
        pytest.param(
            lambda: ScriptError("ERR Error running script"), None, "ExecutorErrors", id="given_a_script_error"
        ),
    ],
)
def test_given_ack_lost_after_finish_when_reaped_then_redelivered_and_dropped_as_stale(
    world: World, error: Callable[[], BaseException], want: Disposition | None, counted: str
) -> None:
    job = world.submit()
    world.executor_redis().faults.fail_next("ack", error=error)

    assert world.drain() == [want]

    assert world.job(job).status is JobStatus.SUCCEEDED
    assert world.state() == idle_state(
        ready=[entry(job.member())], pending=[(member(job), "executor", 1)], inflight={member(job): T0}
    )
    world.clock.advance(REDELIVER_AFTER_MS)
    world.reap()
    assert world.state() == idle_state(
        ready=[entry(job.member(), 1)], inflight={member(job): T0 + REDELIVER_AFTER_MS}
    )

    assert world.drain() == [Disposition.STALE]

    assert world.state() == idle_state()
    assert len(world.callbacks.requests) == 1
    after = world.job(job)
    assert (after.status, after.attempt) == (JobStatus.SUCCEEDED, 1)
    assert world.metrics.counts[counted] == 1


def test_given_ack_reply_lost_after_it_was_applied_then_nothing_is_redelivered(world: World) -> None:
    job = world.submit()
    world.executor_redis().faults.fail_next("ack", after=True)

    assert world.drain() == [Disposition.LEFT_PENDING]
    world.clock.advance(REDELIVER_AFTER_MS)
    world.reap()

    assert world.state() == idle_state()
    assert world.job(job).status is JobStatus.SUCCEEDED
    assert world.drain() == []


def test_given_dead_letter_fails_after_job_marked_dead_then_acknowledged_and_told_so(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    world.callbacks.then(response(410))
    job = world.submit()
    world.executor_redis().faults.fail_next("dead_letter")

    assert world.drain() == [Disposition.DEAD]

    assert world.job(job).status is JobStatus.DEAD  # DynamoDB is the record; the dead stream is only a feed
    assert world.state() == idle_state()  # acknowledged: a re-delivery would only be dropped as stale
    assert world.metrics.counts["DeadFeedFailed"] == 1
    assert "job is dead in DynamoDB; writing its dead-stream entry failed" in caplog.text
    assert "outcome not recorded" not in caplog.text


def test_given_redis_fails_to_index_a_retry_after_its_outcome_was_recorded_then_noted_and_acknowledged(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    world.callbacks.then(response(503))
    job = world.submit()
    world.executor_redis().faults.fail_next("index")

    assert world.drain() == [Disposition.RETRIED]

    after = world.job(job)
    retry_due_ms = T0 + int(BACKOFF_S * 1000)
    assert (after.status, after.generation, after.due_ms) == (JobStatus.SCHEDULED, 2, retry_due_ms)
    assert world.state() == idle_state()  # acknowledged, and Redis does not hold the retry
    (note,) = world.unindexed.notes.values()
    assert [(j.member.encode(), j.due_ms) for j in note.jobs] == [(member(job, 2), retry_due_ms)]
    assert world.metrics.counts["IndexFailed"] == 1
    assert "indexing failed; noting the jobs for the reaper" in caplog.text
    assert "outcome not recorded" not in caplog.text
    assert "delivery failed" not in caplog.text

    world.reap()  # the reaper reads the note (every second in production) and indexes the retry

    assert world.state() == idle_state(due={member(job, 2): retry_due_ms}, wake=1)
    world.clock.advance(int(BACKOFF_S * 1000))
    world.promoter().tick()
    assert world.drain() == [Disposition.SUCCEEDED]
    assert attempt_headers(world) == ["1", "2"]


def test_given_claim_reply_lost_and_one_attempt_allowed_then_delivered_once_and_no_attempt_abandoned(
    world: World,
) -> None:
    """The repeat of the claim finds its own token: not a lease held by someone else, not two attempts."""
    job = world.submit(max_attempts=1)
    world.store.replies.lose("update_item")

    assert world.drain() == [Disposition.SUCCEEDED]

    assert world.store.replies.lost == 1
    after = world.job(job)
    assert (after.status, after.attempt) == (JobStatus.SUCCEEDED, 1)
    assert attempts(world, job) == [(1, ExecutionOutcome.SUCCEEDED, 200, None)]
    assert world.state() == idle_state()


def test_given_finish_reply_lost_on_a_retry_then_retried_and_indexed_not_a_lost_hold(world: World) -> None:
    world.callbacks.then(response(503))
    job = world.submit()
    world.store.replies.lose("update_item", count=2)  # the claim's, then the finish's (one UpdateItem)

    assert world.drain() == [Disposition.RETRIED]

    assert world.store.replies.lost == 2
    retry_due_ms = T0 + int(BACKOFF_S * 1000)
    assert world.job(job).generation == 2
    assert world.state() == idle_state(due={member(job, 2): retry_due_ms}, wake=1)


def test_given_redis_down_at_the_limiter_when_read_then_left_pending_and_delivered_later(
    world: World,
) -> None:
    job = world.submit(max_concurrency={"key": "pool", "limit": 1})
    world.executor_redis().faults.fail_next("acquire_slot")

    assert world.drain() == [Disposition.LEFT_PENDING]

    assert (world.job(job).status, world.job(job).attempt) == (JobStatus.SCHEDULED, 0)
    assert world.state()["pending"] == [(member(job), "executor", 1)]
    world.clock.advance(REDELIVER_AFTER_MS)
    world.reap()
    assert world.drain() == [Disposition.SUCCEEDED]
    assert world.holders(TENANT, "pool") == {}
    assert world.state() == idle_state()


def test_given_redis_error_mid_loop_when_running_then_it_backs_off_and_goes_on_until_its_deadline(
    world: World,
) -> None:
    jobs = [world.submit() for _ in range(2)]
    world.executor_redis().faults.fail("read_ready", on_call=1, times=2)

    # The executor backs off in real time (time.sleep), at most until the deadline: a near one keeps
    # this test fast.
    processed = world.executor().run(deadline_ms=T0 + 20, block_ms=100)

    assert processed == 2
    assert [world.job(j).status for j in jobs] == [JobStatus.SUCCEEDED] * 2
    assert world.state() == idle_state()
    assert world.metrics.counts["IndexUnavailable"] == 2
    assert world.clock.now_ms() >= T0 + 20


def test_given_many_ready_jobs_when_running_then_all_delivered_by_the_deadline(world: World) -> None:
    jobs = [world.submit() for _ in range(10)]

    processed = world.executor().run(deadline_ms=T0 + 2_000, block_ms=100)

    assert processed == 10
    assert {world.job(j).status for j in jobs} == {JobStatus.SUCCEEDED}
    assert world.state() == idle_state()
    assert world.clock.now_ms() >= T0 + 2_000


# DynamoDB failing.


def test_given_dynamodb_down_at_claim_then_left_pending_with_nothing_spent(world: World) -> None:
    job = world.submit(max_concurrency={"key": "pool", "limit": 1})
    world.store.faults.fail_next("claim")

    assert world.drain() == [None]

    after = world.job(job)
    assert (after.status, after.attempt) == (JobStatus.SCHEDULED, 0)
    assert world.holders(TENANT, "pool") == {}
    assert world.state()["pending"] == [(member(job), "executor", 1)]
    assert world.callbacks.requests == []


def test_given_dynamodb_down_at_finish_then_the_job_is_delivered_again_once_its_lease_expires(
    world: World,
) -> None:
    job = world.submit()
    world.store.faults.fail_next("finish", error=lambda: DynamoUnavailable("throttled"))

    assert world.drain() == [None]
    running = world.job(job)
    assert (running.status, running.attempt, running.lease_expires_at_ms) == (JobStatus.RUNNING, 1, LEASE_END)
    assert world.state()["pending"] == [(member(job), "executor", 1)]

    world.clock.advance(REDELIVER_AFTER_MS)
    world.reap()  # re-delivered while the lease still holds: the claim puts it off until the lease ends
    assert world.drain() == [Disposition.DEFERRED]
    assert world.state() == idle_state(due={member(job): LEASE_END + 1}, wake=1)
    world.clock.set(LEASE_END + 1)
    world.promoter().tick()
    assert world.drain() == [Disposition.SUCCEEDED]

    after = world.job(job)
    assert (after.status, after.generation, after.attempt) == (JobStatus.SUCCEEDED, 1, 2)
    assert [o for _, o, _, _ in attempts(world, job)] == [
        ExecutionOutcome.LEASE_EXPIRED,
        ExecutionOutcome.SUCCEEDED,
    ]
    assert len(world.callbacks.requests) == 2
    assert world.state() == idle_state(wake=1)


def test_given_member_of_unknown_job_when_read_then_dropped(world: World) -> None:
    stray = Member(TENANT, "01KDVDNA00R4AD5CTDHKN47WVJ", 1)
    world.index.index(stray, 0, T0, T0)

    assert world.drain() == [Disposition.STALE]
    assert world.state() == idle_state()
    assert world.memory.zset(redis_keys.due_key(0)) == {}


def test_given_malformed_entry_on_the_stream_when_running_then_dead_lettered_and_the_others_delivered(
    world: World,
) -> None:
    world.executor()  # the consumer group exists
    world.memory.add_entry(redis_keys.ready_stream(0), {"d": "0"})
    job = world.submit()

    world.executor().run(deadline_ms=T0 + 2_000, block_ms=100)

    assert world.job(job).status is JobStatus.SUCCEEDED
    assert world.state() == idle_state(dead=[{"m": "", "reason": "malformed_entry", "at": str(T0)}])
    assert world.metrics.counts["MalformedEntries"] == 1


# A claim that must wait (NotYet).


def test_given_entry_ahead_of_its_due_time_when_read_then_put_off_until_then_without_an_attempt(
    world: World,
) -> None:
    job = world.submit(delay_s=30)
    world.index.index(job.member(), job.shard, T0, T0)  # a copy on the stream now (an early index)

    assert world.drain() == [Disposition.DEFERRED]

    after = world.job(job)
    assert (after.status, after.attempt) == (JobStatus.SCHEDULED, 0)
    assert world.callbacks.requests == []
    assert world.state() == idle_state(due={member(job): T0 + 30_000}, wake=1)
    assert world.metrics.counts["ClaimDeferred"] == 1
    world.clock.set(T0 + 29_999)
    assert world.promoter().tick().moved == 0
    world.clock.set(T0 + 30_000)
    world.promoter().tick()
    assert world.drain() == [Disposition.SUCCEEDED]
    assert attempt_headers(world) == ["1"]


# Recovery inside the executor's loop (no reaper needed).


def crash_reading(world: World, consumer: str = "doomed") -> None:
    """Makes consumer read every ready entry and die holding them."""
    doomed = world.redis(consumer)
    doomed.ensure_group(0)
    doomed.read_ready([0], 100, 0)


def test_given_entry_of_a_crashed_executor_when_another_runs_then_it_redelivers_it_itself_and_delivers(
    world: World,
) -> None:
    job = world.submit()
    crash_reading(world)
    world.clock.advance(REDELIVER_AFTER_MS)

    processed = world.executor().run(deadline_ms=world.clock.now_ms() + 500, block_ms=100)

    assert processed == 1
    assert world.job(job).status is JobStatus.SUCCEEDED
    assert world.metrics.counts["Redelivered"] == 1
    assert world.state() == idle_state()


def test_given_recovery_pass_meets_a_redis_blip_then_the_loop_goes_on_and_the_next_pass_recovers(
    world: World,
) -> None:
    stranded = world.submit()
    crash_reading(world)
    world.clock.advance(REDELIVER_AFTER_MS)
    start = world.clock.now_ms()
    world.executor_redis().faults.fail("redeliver", on_call=1)
    fresh = world.submit()

    executor = world.executor()
    # Two runs: the shard readers spin the frozen clock through their empty reads faster than this thread
    # can look at it, so whether the pass due at +2 s happens inside one run is a race of the fake, not of
    # the engine. The second run starts with the pass that is due by then.
    executor.run(deadline_ms=start + 2_100, block_ms=100)
    executor.run(deadline_ms=world.clock.now_ms() + 500, block_ms=100)

    assert world.metrics.counts["RecoveryErrors"] == 1
    assert [world.job(j).status for j in (fresh, stranded)] == [JobStatus.SUCCEEDED] * 2
    assert world.metrics.counts["Redelivered"] == 1  # by the pass recover_every_ms (2 s) later
    assert world.state() == idle_state()


def test_given_entry_out_of_deliveries_when_an_executor_recovers_then_the_job_is_dead_lettered(
    world: World,
) -> None:
    job = world.submit()
    for n in range(MAX_DELIVERIES - 1):
        crash_reading(world, f"doomed{n}")
        world.clock.advance(REDELIVER_AFTER_MS)
        world.reap()
    crash_reading(world, "doomed-last")
    world.clock.advance(REDELIVER_AFTER_MS)
    start = world.clock.now_ms()

    assert world.executor().run(deadline_ms=start + 100, block_ms=100) == 0

    after = world.job(job)
    assert (after.status, after.last_error, after.attempt) == (JobStatus.DEAD, "deliveries_exhausted", 0)
    assert world.state() == idle_state(
        dead=[{"m": member(job), "reason": "deliveries_exhausted", "at": str(start)}]
    )
    assert world.callbacks.requests == []


def test_given_deliveries_when_drained_then_their_outcomes_reach_the_statistics_in_one_write(
    world: World,
) -> None:
    from tests.unit.core.test_stats_buffer import RecordingStats

    stats = RecordingStats()
    world.executor(stats=stats)
    world.submit()
    world.submit()

    assert world.drain() == [Disposition.SUCCEEDED, Disposition.SUCCEEDED]

    # Added up in memory and written once, when the drain ended: not a Redis round trip per job.
    (tallies,) = stats.tallies
    assert [(t.tenant, t.outcome.value, t.count, t.lag_count) for t in tallies] == [
        (TENANT, "succeeded", 2, 2)
    ]
    assert stats.records == []


@pytest.mark.parametrize(
    ("fields", "wait_ms"),
    [
        pytest.param({"run_at": "2025-12-31T00:00:00Z"}, 250, id="given_run_at_a_day_before_acceptance"),
        pytest.param({"delay_s": 1}, 1_250, id="given_a_delay"),
        pytest.param({}, 250, id="given_due_now"),
    ],
)
def test_given_job_fired_250_ms_after_it_could_first_fire_then_its_lag_is_250_ms_in_metrics_and_statistics(
    world: World, fields: dict[str, object], wait_ms: int
) -> None:
    from tests.unit.core.test_stats_buffer import RecordingStats

    stats = RecordingStats()
    world.executor(stats=stats)
    world.submit(**fields)  # accepted at T0, 2026-01-01T00:00:00Z
    world.clock.advance(wait_ms)
    world.promoter().tick()

    assert world.drain() == [Disposition.SUCCEEDED]

    # A run_at in the past asks to fire at once: the time before the acceptance is not lateness.
    assert world.metrics.timings["ScheduleLagMs"] == [250]
    (tallies,) = stats.tallies
    assert [(t.count, t.lag_ms_sum, t.lag_count) for t in tallies] == [(1, 250, 1)]
