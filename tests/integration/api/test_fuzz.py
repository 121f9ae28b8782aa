"""Fuzzes every documented jobs, dead-letters, schedules and health operation with schemathesis, in-process,
and every route that takes a body with bytes that are not UTF-8.

Every answer must be documented (status, content type, body schema), and none may be a 5xx.
"""

from __future__ import annotations

import json

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from hookline.usecases.auth import KNOWN_SCOPES
from tests.integration.api.conftest import Api, make_key
from tests.support.apigw import ApiClient, invoke, proxy_event, wsgi_app

pytestmark = pytest.mark.integration

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
MAX_EXAMPLES = 25
# The document the handler serves (public, needs no dependency): the fuzzed contract is the generated one.
SCHEMA = schemathesis.openapi.from_dict(ApiClient().get("/openapi.json").json()).include(
    path_regex=r"^/(v1/jobs|v1/dead-letters|v1/schedules|v1/signing-secret|healthz)"
)
OPERATIONS = {result.ok().label: result.ok() for result in SCHEMA.get_all_operations()}
# Callback URLs must start with http(s)://, which the schema cannot say, so generated jobs would almost
# never pass validation; half of these operations' examples get a callable loopback URL to reach the store.
CALLBACK_URL = "http://127.0.0.1:9/fuzz"
WITH_JOBS = {
    "POST /v1/jobs",
    "POST /v1/jobs/batch",
    "POST /v1/schedules",
    "PATCH /v1/schedules/{schedule_id}",
}


def with_callable_urls(case: schemathesis.Case) -> schemathesis.Case:
    """Returns the case with every job's url replaced by a loopback URL the tests allow."""
    body = case.body
    if isinstance(body, dict) and case.path.endswith("/batch"):
        jobs = body.get("jobs")
    elif isinstance(body, dict) and case.path.startswith("/v1/schedules"):
        jobs = [body.get("job")]
    else:
        jobs = [body]
    for job in jobs if isinstance(jobs, list) else []:
        if isinstance(job, dict):
            job["url"] = CALLBACK_URL
    return case


def strategy(label: str) -> st.SearchStrategy[schemathesis.Case]:
    """Returns the generator of cases for one operation."""
    generated = OPERATIONS[label].as_strategy()
    return st.one_of(generated, generated.map(with_callable_urls)) if label in WITH_JOBS else generated


@pytest.mark.parametrize("label", sorted(OPERATIONS))
def test_given_generated_requests_when_sent_then_no_server_error_and_every_answer_is_documented(
    api: Api, label: str
) -> None:
    # A generous rate: the fuzzer sends far more than 100 requests a second, and 429s would hide the rest.
    key = make_key(api.container, scopes=KNOWN_SCOPES, rate_limit_per_s=100_000)
    headers = {"Authorization": f"Bearer {key}"}

    @given(case=strategy(label))
    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def fuzz(case: schemathesis.Case) -> None:
        case.call_and_validate(headers=headers, checks=CHECKS, app=wsgi_app)

    fuzz()


def test_given_schema_when_filtered_then_every_jobs_and_schedules_route_is_fuzzed() -> None:
    assert len(OPERATIONS) == 18


BODY_ROUTES = [
    ("POST", "/v1/jobs"),
    ("POST", "/v1/jobs/batch"),
    ("POST", "/v1/jobs/01ARZ3NDEKTSV4RRFFQ69G5FAV/replay"),
    ("POST", "/v1/dead-letters/replay"),
    ("POST", "/v1/signing-secret/rotate"),
    ("POST", "/v1/schedules"),
    ("PATCH", "/v1/schedules/01ARZ3NDEKTSV4RRFFQ69G5FAV"),
]
FIELDS = st.sampled_from(
    ["url", "headers", "body", "run_at", "all", "ids", "jobs", "expression", "job", "paused"]
)
# JSON documents with bytes spliced in at any place (a lone continuation byte, a truncated sequence, ...),
# and plain random bytes: mostly not UTF-8, sometimes valid UTF-8 that is or is not JSON.
SPLICED = st.builds(
    lambda text, at, junk: text[: at % (len(text) + 1)] + junk + text[at % (len(text) + 1) :],
    st.dictionaries(FIELDS, st.one_of(st.text(max_size=16), st.booleans(), st.integers())).map(
        lambda document: json.dumps(document, ensure_ascii=False).encode()
    ),
    st.integers(min_value=0, max_value=256),
    st.binary(min_size=1, max_size=4),
)
RAW_BODIES = st.one_of(SPLICED, st.binary(min_size=1, max_size=256))


def is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@pytest.mark.parametrize(("method", "path"), BODY_ROUTES)
def test_given_bodies_of_arbitrary_bytes_when_sent_then_never_a_5xx_and_non_utf8_is_400(
    api: Api, method: str, path: str
) -> None:
    key = make_key(api.container, scopes=KNOWN_SCOPES, rate_limit_per_s=100_000)

    @given(raw=RAW_BODIES)
    @settings(
        max_examples=MAX_EXAMPLES * 2,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def fuzz(raw: bytes) -> None:
        headers = {"Content-Type": "application/json"}
        response = invoke(proxy_event(method, path, headers=headers, api_key=key, raw_body=raw))

        assert response.status < 500, (raw, response.body)
        if not is_utf8(raw):
            assert (response.status, response.error_code) == (400, "invalid_encoding"), raw

    fuzz()
