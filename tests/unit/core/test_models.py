"""Job requests, index members and flow-control settings."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import ValidationError

from hookline.domain.constants import MAX_BODY_BYTES, MAX_HEADER_VALUE_BYTES, MAX_HEADERS, MAX_HEADERS_BYTES
from hookline.domain.models import FlowControl, Job, JobRequest, JobStatus, Member
from hookline.ports import NullMetrics
from hookline.usecases.submit import JobSubmitter
from tests.fakes.clock import FrozenClock
from tests.fakes.due import FakeDueIndex
from tests.fakes.jobs import FakeJobStore
from tests.fakes.redis_memory import RedisMemory
from tests.fakes.tables import JobsTables


def test_given_minimal_request_when_validated_then_defaults_apply_and_due_is_now() -> None:
    request = JobRequest.model_validate({"url": "https://example.com/hook"})

    assert (request.method, request.max_attempts, request.encoded_body()) == ("POST", 5, "")
    assert request.due_ms(1_000) == 1_000


@pytest.mark.parametrize(
    ("fields", "due_ms"),
    [
        ({"delay_s": 2.5}, 1_002_500),
        ({"run_at": "2030-01-01T00:00:00Z"}, 1_893_456_000_000),
        ({"run_at": "2030-01-01T01:00:00+01:00"}, 1_893_456_000_000),
    ],
    ids=[
        "given_delay_then_now_plus_delay",
        "given_utc_run_at_then_that_instant",
        "given_offset_then_same_instant",
    ],
)
def test_due_time(fields: dict[str, object], due_ms: int) -> None:
    assert JobRequest.model_validate({"url": "http://h/x", **fields}).due_ms(1_000_000) == due_ms


@pytest.mark.parametrize(
    ("fields", "fragment"),
    [
        ({"url": "ftp://example.com"}, "http:// or https://"),
        ({"url": "http://h", "delay_s": 1, "run_at": "2030-01-01T00:00:00Z"}, "not both"),
        ({"url": "http://h", "run_at": "2030-01-01T00:00:00"}, "UTC offset"),
        ({"url": "http://h", "min_backoff_s": 10, "max_backoff_s": 1}, "min_backoff_s"),
        ({"url": "http://h", "headers": {"webhook-id": "x"}}, "set by Hookline"),
        ({"url": "http://h", "headers": {"Host": "x"}}, "set by Hookline"),
        ({"url": "http://h", "headers": {"X-A": "a\r\nInjected: 1"}}, "control character"),
        ({"url": "http://h", "body": "x" * (MAX_BODY_BYTES + 1)}, "exceeds"),
        ({"url": "http://h", "max_attempts": 0}, "greater than or equal"),
        ({"url": "http://h", "surprise": 1}, "Extra inputs"),
        ({"url": "http://h", "rate_limit": {"key": "a/b", "limit": 1, "period_s": 1}}, "pattern"),
    ],
)
def test_given_bad_request_when_validated_then_rejected_with_reason(
    fields: dict[str, object], fragment: str
) -> None:
    with pytest.raises(ValidationError, match=fragment):
        JobRequest.model_validate(fields)


def test_given_json_body_when_encoded_then_compact_json_and_string_body_stays_raw() -> None:
    assert (
        JobRequest.model_validate({"url": "http://h", "body": {"a": [1, "é"]}}).encoded_body()
        == '{"a":[1,"é"]}'
    )
    assert JobRequest.model_validate({"url": "http://h", "body": "raw {"}).encoded_body() == "raw {"


@pytest.mark.parametrize(
    "member",
    [
        Member("acme", "01J0000000000000000000000A", 1),
        Member("acme", "01J0000000000000000000000A", 7, FlowControl("key:with:colons", 5, 1000, None, 0)),
        Member("t.e_n-ant", "X", 2, FlowControl(None, 0, 0, "db", 3)),
    ],
    ids=["plain", "rate_limited", "concurrency_limited"],
)
def test_given_member_when_encoded_and_decoded_then_round_trips(member: Member) -> None:
    assert Member.decode(member.encode()) == member


def test_given_no_limits_when_encoded_then_member_is_short() -> None:
    assert Member("acme", "J", 3).encode() == "acme/J/3"


def error_type(fields: dict[str, object]) -> str:
    with pytest.raises(ValidationError) as caught:
        JobRequest.model_validate({"url": "http://h", **fields})
    return str(caught.value.errors()[0]["type"])


@pytest.mark.parametrize(
    ("run_at", "kind"),
    [
        ("0001-01-01T00:00:00+23:59", "time_out_of_range"),
        ("9999-12-31T23:59:59-23:59", "time_out_of_range"),
        ("1969-12-31T23:59:59.999Z", "time_out_of_range"),
        ("2100-01-01T00:00:00Z", "time_out_of_range"),
        ("2030-01-01T00:00:00", "timezone_required"),
    ],
)
def test_given_run_at_outside_the_window_or_without_offset_when_validated_then_its_own_error_type(
    run_at: str, kind: str
) -> None:
    assert error_type({"run_at": run_at}) == kind


@pytest.mark.parametrize(
    ("headers", "kind"),
    [
        ({"X-A": "nul\x00"}, "header_value"),
        ({"X-A": "vt\x0b"}, "header_value"),
        ({"X-A": "del\x7f"}, "header_value"),
        ({"X-A": "trailing "}, "header_value"),
        ({"X:A": "x"}, "header_name"),
        ({"X\u00e9": "x"}, "header_name"),
        ({"Proxy-Authorization": "x"}, "header_reserved"),
        ({"X-A": "a" * (MAX_HEADER_VALUE_BYTES + 1)}, "header_too_large"),
        ({f"X-{n}": "a" * 8000 for n in range(3)}, "headers_too_large"),
        ({f"X-{n}": "" for n in range(MAX_HEADERS + 1)}, "too_many_headers"),
    ],
)
def test_given_header_http_cannot_carry_or_too_large_when_validated_then_its_own_error_type(
    headers: dict[str, str], kind: str
) -> None:
    assert error_type({"headers": headers}) == kind


def test_given_headers_at_the_limits_when_validated_then_accepted_as_given() -> None:
    headers = {"X-A": "a" * MAX_HEADER_VALUE_BYTES, "X-B": "b\tc " * 1000 + "d", "X-C": "", "X-D": "café"}
    assert sum(len(n) + len(v.encode()) for n, v in headers.items()) <= MAX_HEADERS_BYTES

    assert JobRequest.model_validate({"url": "http://h", "headers": headers}).headers == headers


def _job() -> Job:
    """Returns a stored job built from a request, as submit builds it."""
    submitter = JobSubmitter(
        FakeJobStore(JobsTables(), 1_000),
        FakeDueIndex(RedisMemory(FrozenClock(0)), "s"),
        FrozenClock(0),
        lambda url: None,
        1,
        NullMetrics(),
    )
    return submitter.build(
        "acme", JobRequest.model_validate({"url": "https://example.com/hook", "body": {"a": 1}}), 5_000
    )


def test_given_job_when_changed_then_same_as_dataclasses_replace_and_the_original_untouched() -> None:
    job = _job()
    changes = {"status": JobStatus.RUNNING, "attempt": 1, "lease_expires_at_ms": 9_000, "last_error": None}

    changed = job.with_changes(**changes)

    assert changed == dataclasses.replace(job, **changes)
    assert type(changed) is Job
    assert (job.status, job.attempt, job.lease_expires_at_ms) == (JobStatus.SCHEDULED, 0, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        changed.attempt = 2  # type: ignore[misc]


def test_given_a_name_that_is_no_field_when_changed_then_refused_as_replace_refuses_it() -> None:
    with pytest.raises(TypeError, match="attempts"):
        _job().with_changes(attempts=2)


@pytest.mark.parametrize(
    ("due_ms", "created_ms", "schedule_id", "now_ms", "want_lag_ms"),
    [
        pytest.param(6_000, 5_000, None, 6_250, 250, id="given_future_due_time_then_lag_from_the_due_time"),
        pytest.param(5_000, 5_000, None, 5_250, 250, id="given_due_at_acceptance_then_lag_from_acceptance"),
        pytest.param(
            5_000 - 86_400_000,
            5_000,
            None,
            5_250,
            250,
            id="given_run_at_in_the_past_then_lag_from_acceptance",
        ),
        pytest.param(9_000, 5_000, None, 8_000, -1_000, id="given_fired_before_due_then_negative_lag"),
        pytest.param(
            4_000,
            5_000,
            "sched",
            5_250,
            1_250,
            id="given_schedule_occurrence_created_late_then_from_fire_time",
        ),
    ],
)
def test_fire_lag(
    due_ms: int, created_ms: int, schedule_id: str | None, now_ms: int, want_lag_ms: int
) -> None:
    job = _job().with_changes(due_ms=due_ms, created_ms=created_ms, schedule_id=schedule_id)

    assert job.fire_lag_ms(now_ms) == want_lag_ms
