"""template.yaml as deployed by `hookline dev` on the embedded AWS emulator, driven as a user would.

Every request goes to the stack's own API URL on the emulator (from its ApiUrl output, dev.env's
HOOKLINE_STACK_API_URL), not to the loopback forwarder, so a change to the template's routes, schedules,
environment, IAM or layer packaging is exercised here; keys come from the `hookline` CLI.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from standardwebhooks import Webhook

from tests.e2e.dev_stack import DevStack
from tests.support.receiver import Receiver, Reply
from tests.support.stack import wait_until

# The session's stacks start inside the first test that uses them: a first deployment in a fresh
# checkout pip-installs the layer's dependencies, and on a loaded machine the functions' cold starts
# take tens of seconds, so these tests get more than the suite's 60 s.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]
# The first callback may wait for the promoter's and executor's cold starts on a loaded machine.
CALLBACK_TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def stack_api_url(deployed_stack: DevStack) -> str:
    url = deployed_stack.environment()["HOOKLINE_STACK_API_URL"]
    assert "/_aws/execute-api/" in url, url
    return url


@pytest.fixture(scope="module")
def tenant_key(deployed_stack: DevStack) -> dict[str, Any]:
    created: dict[str, Any] = json.loads(
        deployed_stack.cli("keys", "create", "--tenant", "deployed-e2e", "--json")
    )
    return created


@pytest.fixture
def api(stack_api_url: str, tenant_key: dict[str, Any]) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {tenant_key['api_key']}"}
    with httpx.Client(base_url=stack_api_url, headers=headers, timeout=30) as client:
        yield client


def _job(api: httpx.Client, job_id: str) -> dict[str, Any]:
    response = api.get(f"/v1/jobs/{job_id}")
    assert response.status_code == 200, response.text
    job: dict[str, Any] = response.json()
    return job


def test_given_deployed_stack_then_its_outputs_name_the_api_and_the_tables(deployed_stack: DevStack) -> None:
    environment = deployed_stack.environment()

    assert (
        "https://" in deployed_stack.output
        and ".execute-api.us-east-1.amazonaws.com/dev" in deployed_stack.output
    )
    assert environment["HOOKLINE_JOBS_TABLE"].startswith("hookline-JobsTable-")
    assert environment["HOOKLINE_API_KEYS_TABLE"].startswith("hookline-ApiKeysTable-")


def test_given_cli_key_when_submitting_to_the_stack_api_then_a_signed_callback_arrives(
    api: httpx.Client, tenant_key: dict[str, Any]
) -> None:
    with Receiver() as receiver:
        submitted = api.post(
            "/v1/jobs", json={"url": receiver.url("/hook"), "body": {"n": 1}, "delay_s": 0.5}
        )
        assert submitted.status_code == 201, submitted.text
        job_id = submitted.json()["id"]

        [callback] = receiver.wait_for(1, timeout_s=CALLBACK_TIMEOUT_S)

    Webhook(tenant_key["signing_secret"]).verify(callback.body, callback.headers)
    assert callback.headers["webhook-id"] == job_id
    assert json.loads(callback.body) == {"n": 1}
    wait_until(lambda: _job(api, job_id)["status"] == "succeeded", timeout_s=10)
    [attempt] = api.get(f"/v1/jobs/{job_id}/executions").json()["executions"]
    assert (attempt["attempt"], attempt["status_code"], attempt["outcome"]) == (1, 200, "succeeded")


def test_given_delayed_job_when_cancelled_over_the_stack_api_then_it_never_fires(api: httpx.Client) -> None:
    with Receiver() as receiver:
        submitted = api.post("/v1/jobs", json={"url": receiver.url("/cancelled"), "delay_s": 2})
        assert submitted.status_code == 201, submitted.text
        job_id = submitted.json()["id"]

        cancelled = api.delete(f"/v1/jobs/{job_id}")
        assert cancelled.status_code == 200, cancelled.text
        time.sleep(3)  # one second past its due time

        assert receiver.requests == []
    assert _job(api, job_id)["status"] == "cancelled"


def test_given_every_second_cron_schedule_then_the_promoter_fires_it_and_delete_stops_it(
    api: httpx.Client, tenant_key: dict[str, Any]
) -> None:
    with Receiver() as receiver:
        created = api.post(
            "/v1/schedules",
            json={"expression": "* * * * * *", "job": {"url": receiver.url("/cron"), "body": {"tick": True}}},
        )
        assert created.status_code == 201, created.text
        schedule_id = created.json()["id"]

        first, second = receiver.wait_for(2, timeout_s=CALLBACK_TIMEOUT_S)[:2]
        instances = api.get(f"/v1/schedules/{schedule_id}/jobs").json()["jobs"]
        assert api.delete(f"/v1/schedules/{schedule_id}").status_code == 204

    Webhook(tenant_key["signing_secret"]).verify(first.body, first.headers)
    assert json.loads(first.body) == {"tick": True}
    assert first.headers["webhook-id"] != second.headers["webhook-id"]
    assert {first.headers["webhook-id"], second.headers["webhook-id"]} <= {job["id"] for job in instances}


def test_given_failing_callback_when_attempts_run_out_then_dead_lettered_and_replay_delivers(
    api: httpx.Client,
) -> None:
    with Receiver() as receiver:
        receiver.script("/flaky", [Reply(status=500)])
        submitted = api.post("/v1/jobs", json={"url": receiver.url("/flaky"), "max_attempts": 1})
        assert submitted.status_code == 201, submitted.text
        job_id = submitted.json()["id"]

        receiver.wait_for(1, timeout_s=CALLBACK_TIMEOUT_S)
        wait_until(lambda: _job(api, job_id)["status"] == "dead", timeout_s=10)
        dead = api.get("/v1/dead-letters").json()["jobs"]
        assert job_id in {job["id"] for job in dead}

        # The receiver answers 200 from now on (its script is used up).
        replayed = api.post(f"/v1/jobs/{job_id}/replay")
        assert replayed.status_code == 200, replayed.text
        receiver.wait_for(2, timeout_s=CALLBACK_TIMEOUT_S)

    wait_until(lambda: _job(api, job_id)["status"] == "succeeded", timeout_s=10)
    assert job_id not in {job["id"] for job in api.get("/v1/dead-letters").json()["jobs"]}
