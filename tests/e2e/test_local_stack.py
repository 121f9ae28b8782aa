"""The local stack, started as the README says, driven over HTTP and the CLI as a user would."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from standardwebhooks import Webhook

from tests.e2e.dev_stack import DEPLOYED, HAND_WIRED, DevStack, assert_stops_cleanly, process_exists
from tests.support.receiver import Receiver
from tests.support.stack import wait_until

# The session's stacks start inside the first test that uses them: a first deployment in a fresh
# checkout pip-installs the layer's dependencies, and on a loaded machine the functions' cold starts
# take tens of seconds, so these tests get more than the suite's 60 s.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]


@pytest.fixture(scope="module", params=[DEPLOYED, HAND_WIRED])
def stack(request: pytest.FixtureRequest) -> DevStack:
    """Each kind of `hookline dev`, reached at its loopback address as the README shows."""
    running: DevStack = request.getfixturevalue(
        "deployed_stack" if request.param == DEPLOYED else "hand_wired_stack"
    )
    return running


@pytest.fixture(scope="module")
def tenant_key(stack: DevStack) -> dict[str, Any]:
    """A key and signing secret made with the CLI, against the stack, as the README shows."""
    created: dict[str, Any] = json.loads(stack.cli("keys", "create", "--tenant", "e2e", "--json"))
    return created


@pytest.fixture
def api(stack: DevStack, tenant_key: dict[str, Any]) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {tenant_key['api_key']}"}
    with httpx.Client(base_url=stack.api_url, headers=headers, timeout=10) as client:
        yield client


def _job_status(api: httpx.Client, job_id: str) -> str:
    response = api.get(f"/v1/jobs/{job_id}")
    assert response.status_code == 200, response.text
    status: str = response.json()["status"]
    return status


def test_given_cli_key_when_submitting_then_callback_arrives_signed_and_job_and_execution_read_back(
    api: httpx.Client, tenant_key: dict[str, Any]
) -> None:
    with Receiver() as receiver:
        submitted = api.post(
            "/v1/jobs", json={"url": receiver.url("/hook"), "body": {"order": 7}, "delay_s": 0.5}
        )
        assert submitted.status_code == 201, submitted.text
        job_id = submitted.json()["id"]

        [callback] = receiver.wait_for(1, timeout_s=15)

    # The secret printed once by `keys create` verifies the callback with a Standard Webhooks library.
    Webhook(tenant_key["signing_secret"]).verify(callback.body, callback.headers)
    assert callback.headers["webhook-id"] == job_id
    assert json.loads(callback.body) == {"order": 7}
    wait_until(lambda: _job_status(api, job_id) == "succeeded", timeout_s=10)
    executions = api.get(f"/v1/jobs/{job_id}/executions")
    assert executions.status_code == 200
    [attempt] = executions.json()["executions"]
    assert attempt["attempt"] == 1
    assert attempt["status_code"] == 200
    assert attempt["outcome"] == "succeeded"


def test_given_delayed_job_when_cancelled_then_it_never_fires(api: httpx.Client) -> None:
    with Receiver() as receiver:
        submitted = api.post("/v1/jobs", json={"url": receiver.url("/cancelled"), "delay_s": 2})
        assert submitted.status_code == 201, submitted.text
        job_id = submitted.json()["id"]

        cancelled = api.delete(f"/v1/jobs/{job_id}")
        assert cancelled.status_code == 200, cancelled.text
        time.sleep(3)  # one second past its due time

        assert receiver.requests == []
    assert _job_status(api, job_id) == "cancelled"


def test_given_printed_dev_key_when_running_the_banner_curl_then_the_request_bin_shows_the_callback(
    stack: DevStack,
) -> None:
    headers = {"Authorization": f"Bearer {stack.api_key}"}
    with httpx.Client(base_url=stack.api_url, timeout=10) as client:
        job = {"url": f"{stack.api_url}/dev/sink", "body": {"hello": "world"}, "delay_s": 0.2}
        submitted = client.post("/v1/jobs", json=job, headers=headers)
        assert submitted.status_code == 201, submitted.text
        job_id = submitted.json()["id"]

        def arrived() -> list[dict[str, Any]]:
            listed: list[dict[str, Any]] = client.get("/dev/sink").json()["requests"]
            return [r for r in listed if r["headers"].get("webhook-id") == job_id]

        wait_until(arrived, timeout_s=15)
        [callback] = arrived()
    assert callback["signature_valid"] is True
    assert json.loads(callback["body"]) == {"hello": "world"}


def test_given_dev_env_when_using_the_jobs_cli_and_dashboard_then_both_work_against_the_stack(
    stack: DevStack,
) -> None:
    job = json.loads(stack.cli("jobs", "submit", f"{stack.api_url}/dev/sink", "--in", "0.2s", "--json"))
    headers = {"Authorization": f"Bearer {stack.api_key}"}
    with httpx.Client(base_url=stack.api_url, headers=headers, timeout=10) as client:
        wait_until(lambda: client.get(f"/v1/jobs/{job['id']}").json()["status"] == "succeeded", timeout_s=15)
        page = client.get("/dashboard")
    attempts = json.loads(stack.cli("jobs", "attempts", job["id"], "--json"))

    assert [(a["status_code"], a["outcome"]) for a in attempts] == [(200, "succeeded")]
    assert page.status_code == 200 and "<title>Hookline</title>" in page.text
    assert f"{stack.api_url}/dashboard" in stack.output  # the banner names it


def test_given_unknown_route_or_method_when_requested_then_api_gateway_answers_404_in_the_envelope(
    stack: DevStack,
) -> None:
    unknown = httpx.get(f"{stack.api_url}/no/such/route", timeout=10)
    wrong_method = httpx.put(f"{stack.api_url}/v1/stats", timeout=10)

    for response in (unknown, wrong_method):
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found", response.text
        assert response.json()["error"]["details"] == []


@pytest.mark.parametrize(
    ("signum", "group"), [(signal.SIGINT, True), (signal.SIGTERM, False)], ids=["ctrl-c", "SIGTERM"]
)
def test_given_hand_wired_stack_when_signalled_then_it_exits_cleanly_and_every_process_is_gone(
    tmp_path: Path, signum: int, group: bool
) -> None:
    # The deployed stack gets the same check when the session's deployed_stack stops (tests/e2e/conftest.py).
    with DevStack(tmp_path, HAND_WIRED) as stack:
        assert set(stack.pids) == {"hookline dev", "redis", "moto"}
        assert all(process_exists(pid) for pid in stack.pids.values())

        # A terminal's Ctrl-C signals the whole foreground process group, not only `hookline dev`.
        assert_stops_cleanly(stack, signum, group)


def test_given_invalid_utf8_inside_a_json_string_when_submitted_then_400_invalid_encoding(
    api: httpx.Client,
) -> None:
    # Through the stack's API Gateway (the emulator's, or the hand-wired one), as template.yaml configures it.
    raw = b'{"url": "http://127.0.0.1:9/hook", "body": {"name": "caf\xc3\x28"}}'

    response = api.post("/v1/jobs", content=raw, headers={"Content-Type": "application/json"})

    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == "invalid_encoding"
