"""JobStore and JobAdminStore contract: every named condition's accept and refuse cases, fake and moto alike.

The expected job after each write is built from the job before it, so both backends must store exactly the
same fields (the lease, the live index, the last status code and error, the attempt base). Cancelled
transactions and the live index's reads for reconciliation have their own modules (test_transactions.py,
test_live_jobs.py).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from hookline.adapters.dynamo.job_store import DynamoJobStore
from hookline.domain import constants
from hookline.domain.delivery import Claim, Finish
from hookline.domain.errors import IdempotencyConflict, NotFound, NotYet, StaleState
from hookline.domain.ids import new_id
from hookline.domain.models import Execution, ExecutionOutcome, FlowControl, Job, JobStatus, Member
from tests.contract.conftest import LEASE_MS, DynamoBackend
from tests.fakes.jobs import FakeJobStore
from tests.support.jobs import scheduled_job

NOW = 1_767_225_600_000  # 2026-01-01T00:00:00Z
TIMEOUT_MS = 5_000


def make_job(backend: DynamoBackend, due_ms: int = NOW, **changes: object) -> Job:
    """Returns a new scheduled job of the backend's tenant and shard (not stored)."""
    job = scheduled_job(
        NOW,
        tenant=backend.tenant,
        url="https://example.com/hook",
        body='{"n":1}',
        due_ms=due_ms,
        timeout_ms=TIMEOUT_MS,
        shard=backend.shard,
        flow=FlowControl("partner", 5, 1_000, None, 0),
    )
    return job.with_changes(**changes)


def stored(backend: DynamoBackend, due_ms: int = NOW, **changes: object) -> Job:
    """Creates a new job and returns it."""
    job, created = backend.jobs.create(make_job(backend, due_ms, **changes), "hash", NOW)
    assert created
    return job


def claimed(backend: DynamoBackend, now_ms: int = NOW) -> Job:
    """Creates a job and claims it; returns the running job."""
    return backend.jobs.claim(stored(backend).member(), now_ms).job


def running(job: Job, now_ms: int) -> Job:
    """Returns what a successful claim at now_ms makes of job."""
    return job.with_changes(
        status=JobStatus.RUNNING,
        attempt=job.attempt + 1,
        lease_expires_at_ms=now_ms + LEASE_MS,
        updated_ms=now_ms,
    )


def execution(job: Job, outcome: ExecutionOutcome, status_code: int | None) -> Execution:
    """Returns the record of job's current attempt."""
    return Execution(
        job.tenant, job.job_id, job.attempt, job.generation, NOW, NOW + 20, outcome, 20, status_code
    )


def live_ids(backend: DynamoBackend, page: int = 100) -> list[str]:
    """Returns the ids in the backend shard's live index, paging through it."""
    ids: list[str] = []
    cursor = None
    for _ in range(100):
        jobs, cursor = backend.jobs.live_jobs(backend.shard, cursor, page)
        ids += [job.job_id for job in jobs]
        if cursor is None:
            return ids
    raise AssertionError("live_jobs did not end")


# create and get


def test_given_new_job_when_created_then_stored_as_given_and_live(dynamo_backend: DynamoBackend) -> None:
    job = make_job(dynamo_backend)

    assert dynamo_backend.jobs.create(job, "hash", NOW) == (job, True)
    assert dynamo_backend.jobs.get(job.tenant, job.job_id) == job
    assert live_ids(dynamo_backend) == [job.job_id]


def test_given_unknown_or_foreign_id_when_got_then_not_found(dynamo_backend: DynamoBackend) -> None:
    job = stored(dynamo_backend)

    with pytest.raises(NotFound):
        dynamo_backend.jobs.get(dynamo_backend.tenant, new_id(NOW))
    with pytest.raises(NotFound):
        dynamo_backend.jobs.get("someone-else", job.job_id)


def test_given_idempotency_key_when_same_request_repeated_then_first_job_returned_not_created(
    dynamo_backend: DynamoBackend,
) -> None:
    first, created = dynamo_backend.jobs.create(make_job(dynamo_backend, idempotency_key="k"), "h1", NOW)
    repeat = make_job(dynamo_backend, idempotency_key="k")

    assert created
    assert dynamo_backend.jobs.create(repeat, "h1", NOW + 1_000) == (first, False)
    with pytest.raises(NotFound):
        dynamo_backend.jobs.get(repeat.tenant, repeat.job_id)


def test_given_idempotency_key_when_reused_for_another_request_then_conflict_and_nothing_stored(
    dynamo_backend: DynamoBackend,
) -> None:
    dynamo_backend.jobs.create(make_job(dynamo_backend, idempotency_key="k"), "h1", NOW)
    other = make_job(dynamo_backend, idempotency_key="k")

    with pytest.raises(IdempotencyConflict):
        dynamo_backend.jobs.create(other, "h2", NOW)
    with pytest.raises(NotFound):
        dynamo_backend.jobs.get(other.tenant, other.job_id)


def test_given_idempotency_marker_expired_when_key_used_again_then_new_job(
    dynamo_backend: DynamoBackend,
) -> None:
    dynamo_backend.jobs.create(make_job(dynamo_backend, idempotency_key="k"), "h1", NOW)
    later = NOW + (constants.IDEMPOTENCY_RETENTION_S + 1) * 1000
    again = make_job(dynamo_backend, idempotency_key="k")

    assert dynamo_backend.jobs.create(again, "h2", later + 1_000) == (again, True)
    assert dynamo_backend.jobs.create(make_job(dynamo_backend, idempotency_key="k"), "h2", later + 2_000) == (
        again,
        False,
    )


def test_given_same_key_in_another_tenant_when_created_then_independent(
    dynamo_backend: DynamoBackend,
) -> None:
    dynamo_backend.jobs.create(make_job(dynamo_backend, idempotency_key="k"), "h1", NOW)
    elsewhere = make_job(dynamo_backend, idempotency_key="k", tenant=dynamo_backend.tenant + "-b")

    assert dynamo_backend.jobs.create(elsewhere, "h2", NOW) == (elsewhere, True)


# claim: CLAIMABLE


def test_given_scheduled_job_when_claimed_then_running_under_a_lease(dynamo_backend: DynamoBackend) -> None:
    job = stored(dynamo_backend)

    claim = dynamo_backend.jobs.claim(job.member(), NOW + 10)

    assert claim == Claim(running(job, NOW + 10))
    assert dynamo_backend.jobs.get(job.tenant, job.job_id) == claim.job
    assert live_ids(dynamo_backend) == [job.job_id]


@pytest.mark.parametrize(
    ("lease_offset_ms", "claimable"),
    [
        pytest.param(-1, False, id="given_lease_ending_in_one_ms_then_not_yet"),
        pytest.param(0, False, id="given_lease_expiring_exactly_now_then_not_yet"),
        pytest.param(1, True, id="given_lease_expired_one_ms_ago_then_taken_over"),
    ],
)
def test_given_running_job_when_claimed_again_then_only_after_its_lease(
    dynamo_backend: DynamoBackend, lease_offset_ms: int, claimable: bool
) -> None:
    first = claimed(dynamo_backend, NOW)
    assert first.lease_expires_at_ms is not None
    now = first.lease_expires_at_ms + lease_offset_ms

    if not claimable:
        with pytest.raises(NotYet) as refused:
            dynamo_backend.jobs.claim(first.member(), now)
        assert refused.value.retry_at_ms == first.lease_expires_at_ms + 1
        assert dynamo_backend.jobs.get(first.tenant, first.job_id) == first
        return
    claim = dynamo_backend.jobs.claim(first.member(), now)
    assert claim == Claim(running(first, now), abandoned_attempt=1, abandoned_since_ms=NOW)
    assert dynamo_backend.jobs.get(first.tenant, first.job_id).attempt == 2


@pytest.mark.parametrize(
    ("now", "claimable"),
    [
        pytest.param(NOW + 999, False, id="given_one_ms_before_due_then_not_yet_until_the_due_time"),
        pytest.param(NOW + 1_000, True, id="given_exactly_due_then_claimed"),
    ],
)
def test_given_scheduled_job_due_later_when_claimed_then_only_from_its_due_time(
    dynamo_backend: DynamoBackend, now: int, claimable: bool
) -> None:
    job = stored(dynamo_backend, due_ms=NOW + 1_000)

    if not claimable:
        with pytest.raises(NotYet) as refused:
            dynamo_backend.jobs.claim(job.member(), now)
        assert refused.value.retry_at_ms == NOW + 1_000
        assert dynamo_backend.jobs.get(job.tenant, job.job_id) == job
        return
    assert dynamo_backend.jobs.claim(job.member(), now) == Claim(running(job, now))


def test_given_job_due_later_or_held_when_claimed_for_another_generation_then_stale_not_not_yet(
    dynamo_backend: DynamoBackend,
) -> None:
    later = stored(dynamo_backend, due_ms=NOW + 60_000, generation=2)
    held = claimed(dynamo_backend, NOW)

    for member in (Member(later.tenant, later.job_id, 1), Member(held.tenant, held.job_id, 2)):
        with pytest.raises(StaleState):
            dynamo_backend.jobs.claim(member, NOW + 1)
    assert dynamo_backend.jobs.get(held.tenant, held.job_id) == held


@pytest.mark.parametrize(
    "member_of",
    [
        pytest.param(
            lambda job: Member(job.tenant, job.job_id, job.generation + 1), id="given_newer_generation"
        ),
        pytest.param(
            lambda job: Member(job.tenant, job.job_id, job.generation - 1), id="given_older_generation"
        ),
        pytest.param(lambda job: Member(job.tenant, new_id(NOW), 1), id="given_unknown_job"),
        pytest.param(
            lambda job: Member("someone-else", job.job_id, job.generation), id="given_foreign_tenant"
        ),
    ],
)
def test_given_member_not_of_the_stored_job_when_claimed_then_stale_and_unchanged(
    dynamo_backend: DynamoBackend, member_of: Callable[[Job], Member]
) -> None:
    job = stored(dynamo_backend, generation=2)

    with pytest.raises(StaleState):
        dynamo_backend.jobs.claim(member_of(job), NOW)
    assert dynamo_backend.jobs.get(job.tenant, job.job_id) == job


@pytest.mark.parametrize("status", [JobStatus.SUCCEEDED, JobStatus.DEAD, JobStatus.CANCELLED])
def test_given_finished_job_when_claimed_then_stale(dynamo_backend: DynamoBackend, status: JobStatus) -> None:
    job = stored(dynamo_backend, status=status)

    with pytest.raises(StaleState):
        dynamo_backend.jobs.claim(job.member(), NOW)


# renew_lease: HELD_BY_ATTEMPT


@pytest.mark.parametrize("timeout_ms", [None, 5_000], ids=["unbounded", "bounded"])
def test_given_attempt_holding_the_job_when_lease_renewed_then_only_the_lease_moves(
    dynamo_backend: DynamoBackend, timeout_ms: int | None
) -> None:
    """With or without a bound on the call (the heartbeat bounds each renewal by the lease it extends)."""
    job = claimed(dynamo_backend, NOW)
    assert job.lease_expires_at_ms is not None
    renewed_to = job.lease_expires_at_ms + 5_000

    dynamo_backend.jobs.renew_lease(job, renewed_to, timeout_ms=timeout_ms)

    # updated_ms still says when the attempt was claimed (a take-over records it as the attempt's start)
    assert dynamo_backend.jobs.get(job.tenant, job.job_id) == job.with_changes(lease_expires_at_ms=renewed_to)
    with pytest.raises(NotYet) as refused:
        dynamo_backend.jobs.claim(job.member(), job.lease_expires_at_ms + 1)
    assert refused.value.retry_at_ms == renewed_to + 1
    taken = dynamo_backend.jobs.claim(job.member(), renewed_to + 1)
    assert (taken.abandoned_attempt, taken.abandoned_since_ms) == (1, NOW)


@pytest.mark.parametrize(
    "stale_view",
    [
        pytest.param(lambda job: job.with_changes(attempt=job.attempt - 1), id="given_an_earlier_attempt"),
        pytest.param(
            lambda job: job.with_changes(generation=job.generation + 1), id="given_another_generation"
        ),
        pytest.param(lambda job: job.with_changes(job_id=new_id(NOW)), id="given_an_unknown_job"),
    ],
)
def test_given_attempt_that_lost_the_job_when_lease_renewed_then_stale_and_unchanged(
    dynamo_backend: DynamoBackend, stale_view: Callable[[Job], Job]
) -> None:
    first = claimed(dynamo_backend)
    assert first.lease_expires_at_ms is not None
    second = dynamo_backend.jobs.claim(first.member(), first.lease_expires_at_ms + 1).job

    with pytest.raises(StaleState):
        dynamo_backend.jobs.renew_lease(stale_view(second), NOW + 60_000, timeout_ms=5_000)
    assert dynamo_backend.jobs.get(first.tenant, first.job_id) == second


def test_given_attempt_already_finished_when_lease_renewed_then_stale(dynamo_backend: DynamoBackend) -> None:
    job = claimed(dynamo_backend)
    dynamo_backend.jobs.finish(job, Finish(JobStatus.SUCCEEDED, 200, None), [], NOW + 5)
    done = dynamo_backend.jobs.get(job.tenant, job.job_id)

    with pytest.raises(StaleState):
        dynamo_backend.jobs.renew_lease(job, NOW + 60_000)
    assert dynamo_backend.jobs.get(job.tenant, job.job_id) == done
    assert live_ids(dynamo_backend) == []


# finish: HELD_BY_ATTEMPT


@pytest.mark.parametrize(
    ("finish", "want_changes"),
    [
        pytest.param(
            Finish(JobStatus.SUCCEEDED, 200, None),
            {"status": JobStatus.SUCCEEDED, "last_status_code": 200},
            id="given_success_then_succeeded_and_not_live",
        ),
        pytest.param(
            Finish(JobStatus.DEAD, 404, "status 404"),
            {"status": JobStatus.DEAD, "last_status_code": 404, "last_error": "status 404"},
            id="given_permanent_failure_then_dead_and_not_live",
        ),
        pytest.param(
            Finish(JobStatus.SCHEDULED, None, "timeout", NOW + 9_000),
            {"status": JobStatus.SCHEDULED, "last_error": "timeout", "generation": 2, "due_ms": NOW + 9_000},
            id="given_retry_then_scheduled_in_next_generation_and_live_at_its_due_time",
        ),
    ],
)
def test_given_attempt_holding_the_job_when_finished_then_next_state_and_its_record(
    dynamo_backend: DynamoBackend, finish: Finish, want_changes: dict[str, object]
) -> None:
    job = claimed(dynamo_backend)
    record = execution(job, ExecutionOutcome.SUCCEEDED, finish.status_code)

    dynamo_backend.jobs.finish(job, finish, [record], NOW + 50)

    want = job.with_changes(updated_ms=NOW + 50, lease_expires_at_ms=None, **want_changes)
    assert dynamo_backend.jobs.get(job.tenant, job.job_id) == want
    assert dynamo_backend.jobs.executions(job.tenant, job.job_id) == [record]
    assert live_ids(dynamo_backend) == ([job.job_id] if finish.status is JobStatus.SCHEDULED else [])


def test_given_earlier_outcome_recorded_when_finished_then_code_and_error_replaced(
    dynamo_backend: DynamoBackend,
) -> None:
    job = claimed(dynamo_backend)
    dynamo_backend.jobs.finish(job, Finish(JobStatus.SCHEDULED, 503, "status 503", NOW), [], NOW)
    second = dynamo_backend.jobs.claim(Member(job.tenant, job.job_id, 2), NOW + 1).job

    dynamo_backend.jobs.finish(second, Finish(JobStatus.SCHEDULED, None, "timeout", NOW + 5), [], NOW + 2)

    after = dynamo_backend.jobs.get(job.tenant, job.job_id)
    assert (after.last_status_code, after.last_error, after.generation, after.attempt) == (
        None,
        "timeout",
        3,
        2,
    )


@pytest.mark.parametrize(
    "stale_view",
    [
        pytest.param(lambda job: job.with_changes(attempt=job.attempt - 1), id="given_an_earlier_attempt"),
        pytest.param(
            lambda job: job.with_changes(generation=job.generation + 1), id="given_another_generation"
        ),
    ],
)
def test_given_attempt_that_lost_the_job_when_finished_then_stale_and_nothing_written(
    dynamo_backend: DynamoBackend, stale_view: Callable[[Job], Job]
) -> None:
    first = claimed(dynamo_backend)
    assert first.lease_expires_at_ms is not None
    second = dynamo_backend.jobs.claim(first.member(), first.lease_expires_at_ms + 1).job
    view = stale_view(second)

    with pytest.raises(StaleState):
        dynamo_backend.jobs.finish(
            view,
            Finish(JobStatus.SUCCEEDED, 200, None),
            [execution(view, ExecutionOutcome.SUCCEEDED, 200)],
            NOW,
        )
    assert dynamo_backend.jobs.get(first.tenant, first.job_id) == second
    assert dynamo_backend.jobs.executions(first.tenant, first.job_id) == []


@pytest.mark.parametrize("status", [JobStatus.SCHEDULED, JobStatus.SUCCEEDED, JobStatus.CANCELLED])
def test_given_job_not_running_when_finished_then_stale(
    dynamo_backend: DynamoBackend, status: JobStatus
) -> None:
    job = stored(dynamo_backend, status=status, attempt=1)

    with pytest.raises(StaleState):
        dynamo_backend.jobs.finish(job, Finish(JobStatus.SUCCEEDED, 200, None), [], NOW)
    assert dynamo_backend.jobs.get(job.tenant, job.job_id) == job


# mark_dead: DEAD_LETTERABLE


@pytest.mark.parametrize(
    ("claim_first", "now"),
    [
        pytest.param(False, NOW + 7, id="given_scheduled_job"),
        pytest.param(True, NOW + LEASE_MS + 1, id="given_running_job_whose_lease_expired"),
    ],
)
def test_given_job_of_the_generation_nobody_holds_when_marked_dead_then_dead_with_reason(
    dynamo_backend: DynamoBackend, claim_first: bool, now: int
) -> None:
    job = claimed(dynamo_backend) if claim_first else stored(dynamo_backend)

    dynamo_backend.jobs.mark_dead(job.member(), "deliveries_exhausted", now)

    want = job.with_changes(
        status=JobStatus.DEAD, last_error="deliveries_exhausted", updated_ms=now, lease_expires_at_ms=None
    )
    assert dynamo_backend.jobs.get(job.tenant, job.job_id) == want
    assert live_ids(dynamo_backend) == []


@pytest.mark.parametrize(
    "lease_offset_ms",
    [
        pytest.param(-1, id="given_lease_ending_in_one_ms"),
        pytest.param(0, id="given_lease_expiring_exactly_now"),
    ],
)
def test_given_attempt_holding_its_lease_when_marked_dead_then_stale_and_the_attempt_keeps_the_job(
    dynamo_backend: DynamoBackend, lease_offset_ms: int
) -> None:
    job = claimed(dynamo_backend)
    assert job.lease_expires_at_ms is not None

    with pytest.raises(StaleState):
        dynamo_backend.jobs.mark_dead(
            job.member(), "deliveries_exhausted", job.lease_expires_at_ms + lease_offset_ms
        )
    assert dynamo_backend.jobs.get(job.tenant, job.job_id) == job
    assert live_ids(dynamo_backend) == [job.job_id]


def test_given_job_moved_on_when_marked_dead_then_stale_and_unchanged(dynamo_backend: DynamoBackend) -> None:
    job = stored(dynamo_backend, generation=3)
    done = stored(dynamo_backend, status=JobStatus.SUCCEEDED)

    for member in (
        Member(job.tenant, job.job_id, 2),
        done.member(),
        Member(job.tenant, new_id(NOW), 1),
    ):
        with pytest.raises(StaleState):
            dynamo_backend.jobs.mark_dead(member, "deliveries_exhausted", NOW)
    assert dynamo_backend.jobs.get(job.tenant, job.job_id) == job
    assert dynamo_backend.jobs.get(done.tenant, done.job_id) == done


# cancel: CANCELLABLE


def test_given_scheduled_job_when_cancelled_then_cancelled_and_returned_so(
    dynamo_backend: DynamoBackend,
) -> None:
    job = stored(dynamo_backend)
    want = job.with_changes(status=JobStatus.CANCELLED, updated_ms=NOW + 3)

    assert dynamo_backend.jobs.cancel(job.tenant, job.job_id, NOW + 3) == want
    assert dynamo_backend.jobs.get(job.tenant, job.job_id) == want
    assert live_ids(dynamo_backend) == []


def test_given_running_job_when_cancelled_then_stale_naming_its_status(dynamo_backend: DynamoBackend) -> None:
    job = claimed(dynamo_backend)

    with pytest.raises(StaleState, match="is running"):
        dynamo_backend.jobs.cancel(job.tenant, job.job_id, NOW)
    assert dynamo_backend.jobs.get(job.tenant, job.job_id) == job


def test_given_unknown_or_foreign_job_when_cancelled_then_not_found(dynamo_backend: DynamoBackend) -> None:
    job = stored(dynamo_backend)

    with pytest.raises(NotFound):
        dynamo_backend.jobs.cancel(job.tenant, new_id(NOW), NOW)
    with pytest.raises(NotFound):
        dynamo_backend.jobs.cancel("someone-else", job.job_id, NOW)


# replay: REPLAYABLE


def test_given_dead_job_when_replayed_then_scheduled_now_in_new_generation_with_fresh_budget(
    dynamo_backend: DynamoBackend,
) -> None:
    job = claimed(dynamo_backend)
    dynamo_backend.jobs.finish(job, Finish(JobStatus.DEAD, 410, "status 410"), [], NOW + 1)

    replayed = dynamo_backend.jobs.replay(job.tenant, job.job_id, job.shard, NOW + 9)

    want = job.with_changes(
        status=JobStatus.SCHEDULED,
        generation=2,
        attempt_base=1,
        due_ms=NOW + 9,
        updated_ms=NOW + 9,
        lease_expires_at_ms=None,
    )
    assert replayed == want
    assert dynamo_backend.jobs.get(job.tenant, job.job_id) == want
    assert live_ids(dynamo_backend) == [job.job_id]


def test_given_job_not_dead_when_replayed_then_stale_or_not_found(dynamo_backend: DynamoBackend) -> None:
    job = stored(dynamo_backend)

    with pytest.raises(StaleState, match="is scheduled"):
        dynamo_backend.jobs.replay(job.tenant, job.job_id, job.shard, NOW)
    with pytest.raises(NotFound):
        dynamo_backend.jobs.replay(job.tenant, new_id(NOW), job.shard, NOW)


# run now: RUNNABLE_NOW


def test_given_a_waiting_job_when_run_now_then_due_now_in_a_new_generation_attempts_unchanged(
    dynamo_backend: DynamoBackend,
) -> None:
    job = claimed(dynamo_backend)
    dynamo_backend.jobs.finish(
        job, Finish(JobStatus.SCHEDULED, 503, "status 503", NOW + 3_600_000), [], NOW + 1
    )
    waiting = dynamo_backend.jobs.get(job.tenant, job.job_id)

    moved = dynamo_backend.jobs.run_now(job.tenant, job.job_id, waiting.generation, job.shard, NOW + 9)

    want = waiting.with_changes(generation=waiting.generation + 1, due_ms=NOW + 9, updated_ms=NOW + 9)
    assert moved == want
    assert (moved.attempt, moved.attempt_base) == (waiting.attempt, waiting.attempt_base) == (1, 0)
    assert dynamo_backend.jobs.get(job.tenant, job.job_id) == want
    assert live_ids(dynamo_backend) == [job.job_id]
    with pytest.raises(StaleState):  # the earlier generation's entry can no longer claim it
        dynamo_backend.jobs.claim(waiting.member(), NOW + 10)
    assert dynamo_backend.jobs.claim(moved.member(), NOW + 10).job.generation == moved.generation


def test_given_a_job_not_waiting_when_run_now_then_stale_or_not_found(dynamo_backend: DynamoBackend) -> None:
    job = claimed(dynamo_backend)

    waiting = stored(dynamo_backend, job_id=new_id(NOW + 1))

    with pytest.raises(StaleState, match="is running"):
        dynamo_backend.jobs.run_now(job.tenant, job.job_id, job.generation, job.shard, NOW)
    with pytest.raises(StaleState, match="in generation 2"):  # waiting, but not in the generation read
        dynamo_backend.jobs.run_now(waiting.tenant, waiting.job_id, 2, waiting.shard, NOW)
    with pytest.raises(NotFound):
        dynamo_backend.jobs.run_now(job.tenant, new_id(NOW), 1, job.shard, NOW)
    with pytest.raises(NotFound):
        dynamo_backend.jobs.run_now("someone-else", job.job_id, 1, job.shard, NOW)
    assert dynamo_backend.jobs.get(job.tenant, job.job_id) == job
    assert dynamo_backend.jobs.get(waiting.tenant, waiting.job_id) == waiting


# reads: list_jobs, executions


def test_given_jobs_when_listed_then_newest_first_in_pages(dynamo_backend: DynamoBackend) -> None:
    jobs = [stored(dynamo_backend, job_id=new_id(NOW + n)) for n in range(5)]
    newest_first = [j.job_id for j in reversed(jobs)]

    page1, after1 = dynamo_backend.jobs.list_jobs(dynamo_backend.tenant, None, None, 2)
    page2, after2 = dynamo_backend.jobs.list_jobs(dynamo_backend.tenant, None, after1, 2)
    page3, after3 = dynamo_backend.jobs.list_jobs(dynamo_backend.tenant, None, after2, 2)

    assert [j.job_id for j in page1 + page2 + page3] == newest_first
    assert (after1, after2, after3) == (newest_first[1], newest_first[3], None)


def test_given_jobs_in_several_states_when_listed_by_status_then_only_that_status(
    dynamo_backend: DynamoBackend,
) -> None:
    statuses = [JobStatus.DEAD, JobStatus.SCHEDULED, JobStatus.DEAD, JobStatus.SUCCEEDED, JobStatus.DEAD]
    jobs = [stored(dynamo_backend, job_id=new_id(NOW + n), status=s) for n, s in enumerate(statuses)]
    dead_newest_first = [j.job_id for j in reversed(jobs) if j.status is JobStatus.DEAD]

    page1, after1 = dynamo_backend.jobs.list_jobs(dynamo_backend.tenant, JobStatus.DEAD, None, 2)
    page2, after2 = dynamo_backend.jobs.list_jobs(dynamo_backend.tenant, JobStatus.DEAD, after1, 2)

    assert [j.job_id for j in page1] == dead_newest_first[:2]
    assert [j.job_id for j in page2] == dead_newest_first[2:]
    assert after2 is None
    assert dynamo_backend.jobs.list_jobs("nobody", None, None, 10) == ([], None)


def test_given_jobs_over_every_bucket_when_listed_by_status_with_a_small_read_budget_then_each_once_in_order(
    dynamo_backend: DynamoBackend,
) -> None:
    cycle = [JobStatus.DEAD, JobStatus.SCHEDULED, JobStatus.SUCCEEDED, JobStatus.SCHEDULED]
    jobs = [stored(dynamo_backend, job_id=new_id(NOW + n), status=cycle[n % 4]) for n in range(40)]
    newest_first = [j.job_id for j in reversed(jobs)]
    dead_newest_first = [j.job_id for j in reversed(jobs) if j.status is JobStatus.DEAD]
    store = dynamo_backend.jobs
    assert isinstance(store, (DynamoJobStore, FakeJobStore))

    def pages(status: JobStatus | None, limit: int, max_read: int) -> tuple[list[str], int]:
        found: list[str] = []
        after: str | None = None
        for calls in range(1, 200):
            # A filtered round reads one item of each bucket: 8 reads, past the budget of 4.
            page, after = store.list_jobs(
                dynamo_backend.tenant, status, after, limit, max_read=max_read, filtered_batch=8
            )
            found += [job.job_id for job in page]
            if after is None:
                return found, calls
        raise AssertionError("the listing did not end")

    dead, calls = pages(JobStatus.DEAD, 3, max_read=4)
    assert dead == dead_newest_first
    assert calls > 4  # 10 in pages of 3, but the budget cut pages short: they went on from where it stopped
    assert pages(None, 7, max_read=1_000)[0] == newest_first


def test_given_attempts_recorded_when_read_then_oldest_first_and_none_for_unknown(
    dynamo_backend: DynamoBackend,
) -> None:
    job = claimed(dynamo_backend)
    first = execution(job, ExecutionOutcome.RETRYABLE, 503)
    dynamo_backend.jobs.finish(job, Finish(JobStatus.SCHEDULED, 503, "status 503", NOW), [first], NOW)
    again = dynamo_backend.jobs.claim(Member(job.tenant, job.job_id, 2), NOW + 1).job
    second = execution(again, ExecutionOutcome.SUCCEEDED, 200)
    dynamo_backend.jobs.finish(again, Finish(JobStatus.SUCCEEDED, 200, None), [second], NOW + 2)

    assert dynamo_backend.jobs.executions(job.tenant, job.job_id) == [first, second]
    assert dynamo_backend.jobs.executions(job.tenant, new_id(NOW)) == []


def test_given_a_take_over_when_finished_then_the_abandoned_first_attempt_and_the_new_one_are_listed(
    dynamo_backend: DynamoBackend,
) -> None:
    """Attempt 1's record goes into the job item, attempt 2's into the executions table, in one finish."""
    first = claimed(dynamo_backend)
    assert first.lease_expires_at_ms is not None
    taken = dynamo_backend.jobs.claim(first.member(), first.lease_expires_at_ms + 1)
    abandoned = Execution(
        first.tenant, first.job_id, 1, 1, NOW, NOW + LEASE_MS + 1, ExecutionOutcome.LEASE_EXPIRED
    )
    record = execution(taken.job, ExecutionOutcome.SUCCEEDED, 200)

    dynamo_backend.jobs.finish(
        taken.job, Finish(JobStatus.SUCCEEDED, 200, None), [abandoned, record], NOW + 5
    )

    assert dynamo_backend.jobs.executions(first.tenant, first.job_id) == [abandoned, record]


def test_given_a_replayed_job_when_its_new_run_finishes_then_every_attempt_of_both_runs_is_listed(
    dynamo_backend: DynamoBackend,
) -> None:
    job = claimed(dynamo_backend)
    gone = execution(job, ExecutionOutcome.PERMANENT, 410)
    dynamo_backend.jobs.finish(job, Finish(JobStatus.DEAD, 410, "status 410"), [gone], NOW + 1)
    replayed = dynamo_backend.jobs.replay(job.tenant, job.job_id, job.shard, NOW + 2)
    again = dynamo_backend.jobs.claim(replayed.member(), NOW + 3).job
    record = execution(again, ExecutionOutcome.SUCCEEDED, 200)

    dynamo_backend.jobs.finish(again, Finish(JobStatus.SUCCEEDED, 200, None), [record], NOW + 4)

    assert [e.attempt for e in dynamo_backend.jobs.executions(job.tenant, job.job_id)] == [1, 2]
    assert dynamo_backend.jobs.executions(job.tenant, job.job_id) == [gone, record]
