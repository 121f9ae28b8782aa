"""Fuzzes every documented jobs, dead-letters and health operation with schemathesis, in-process.

Every answer must be documented (status, content type, body schema), and none may be a 5xx.
"""

from __future__ import annotations

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

from tests.integration.api.conftest import Api, make_key
from tests.support.apigw import ApiClient, wsgi_app

pytestmark = pytest.mark.integration

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
MAX_EXAMPLES = 25
# The document the handler serves (public, needs no dependency): the fuzzed contract is the generated one.
# Schedules belong to the cron work, which fuzzes its own routes.
SCHEMA = schemathesis.openapi.from_dict(ApiClient().get("/openapi.json").json()).include(
    path_regex=r"^/(v1/jobs|v1/dead-letters|healthz)"
)
OPERATIONS = {result.ok().label: result.ok() for result in SCHEMA.get_all_operations()}
# Callback URLs must start with http(s)://, which the schema cannot say, so generated jobs would almost
# never pass validation; half of these operations' examples get a callable loopback URL to reach the store.
CALLBACK_URL = "http://127.0.0.1:9/fuzz"
WITH_JOBS = {"POST /v1/jobs", "POST /v1/jobs/batch"}


def with_callable_urls(case: schemathesis.Case) -> schemathesis.Case:
    """Returns the case with every job's url replaced by a loopback URL the tests allow."""
    body = case.body
    jobs = body.get("jobs") if isinstance(body, dict) and case.path.endswith("/batch") else [body]
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
    key = make_key(api.container, rate_limit_per_s=100_000)
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


def test_given_schema_when_filtered_then_every_jobs_route_is_fuzzed() -> None:
    assert len(OPERATIONS) == 10
