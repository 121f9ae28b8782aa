"""template.yaml deployed with ApiKind=Http on the embedded emulator: requests go to the stack's HTTP API
($default stage and route, payload format 2.0), from its ApiUrl output, not to the loopback forwarder.

ministack emulates AWS::ApiGatewayV2 (API, integration, route, stage) and sends payload format 2.0 events;
it hands a body over as text for text/*, application/json, application/xml and application/javascript and
base64-encodes every other (as its source says AWS does). Not checked here: AWS's own HTTP API.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from standardwebhooks import Webhook

from tests.e2e.dev_stack import DEPLOYED, DevStack, assert_stops_cleanly
from tests.support.receiver import Receiver

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]
# The first callback may wait for the promoter's and executor's cold starts on a loaded machine.
CALLBACK_TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def http_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    """`hookline dev --parameter ApiKind=Http`."""
    state_dir: Path = tmp_path_factory.mktemp("http-api-stack")
    with DevStack(state_dir, DEPLOYED, args=("--parameter", "ApiKind=Http")) as running:
        yield running
        assert_stops_cleanly(running, signal.SIGINT, group=True)


@pytest.fixture(scope="module")
def tenant_key(http_stack: DevStack) -> dict[str, Any]:
    created: dict[str, Any] = json.loads(http_stack.cli("keys", "create", "--tenant", "http-e2e", "--json"))
    return created


@pytest.fixture
def api(http_stack: DevStack, tenant_key: dict[str, Any]) -> Iterator[httpx.Client]:
    url = http_stack.environment()["HOOKLINE_STACK_API_URL"]
    headers = {"Authorization": f"Bearer {tenant_key['api_key']}"}
    with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
        yield client


def test_given_http_api_stack_then_api_url_names_the_http_api_without_a_stage(http_stack: DevStack) -> None:
    url = http_stack.environment()["HOOKLINE_STACK_API_URL"]

    assert "/_aws/execute-api/" in url and not url.rstrip("/").endswith("/dev"), url
    assert ".execute-api.us-east-1.amazonaws.com  (the stack's output)" in http_stack.output


def test_given_http_api_when_submitting_a_job_then_a_signed_callback_arrives(
    api: httpx.Client, tenant_key: dict[str, Any]
) -> None:
    with Receiver() as receiver:
        submitted = api.post(
            "/v1/jobs", json={"url": receiver.url("/hook"), "body": {"n": 1}, "delay_s": 0.5}
        )
        assert submitted.status_code == 201, submitted.text
        assert submitted.headers["x-request-id"]

        [callback] = receiver.wait_for(1, timeout_s=CALLBACK_TIMEOUT_S)

    Webhook(tenant_key["signing_secret"]).verify(callback.body, callback.headers)
    assert callback.headers["webhook-id"] == submitted.json()["id"]
    assert json.loads(callback.body) == {"n": 1}


def test_given_http_api_when_refusing_then_the_rest_api_envelope_and_codes(api: httpx.Client) -> None:
    unauthorised = httpx.get(f"{api.base_url}/v1/jobs", timeout=30)
    unknown = api.get("/v1/nothing-here")
    bad_json = api.post("/v1/jobs", content=b"{not json", headers={"Content-Type": "application/json"})
    not_json = api.post("/v1/jobs", content=b"{}", headers={"Content-Type": "text/plain"})

    assert (unauthorised.status_code, unauthorised.json()["error"]["code"]) == (401, "unauthorized")
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "not_found")
    assert (bad_json.status_code, bad_json.json()["error"]["code"]) == (422, "validation_error")
    assert (not_json.status_code, not_json.json()["error"]["code"]) == (415, "unsupported_media_type")


def test_given_http_api_when_a_json_suffix_body_is_not_utf8_then_400_invalid_encoding(
    api: httpx.Client,
) -> None:
    # A media type the HTTP API does not deem text arrives base64-encoded: its bytes reach the gate.
    response = api.post(
        "/v1/jobs",
        content=b'{"url": "http://127.0.0.1:9/\xff"}',
        headers={"Content-Type": "application/vnd.api+json"},
    )

    assert (response.status_code, response.json()["error"]["code"]) == (400, "invalid_encoding")


@pytest.mark.xfail(
    strict=True,
    reason="an HTTP API hands application/json over as text, invalid bytes as U+FFFD (docs/deploying.md)",
)
def test_given_http_api_when_an_application_json_body_is_not_utf8_then_400_invalid_encoding(
    api: httpx.Client,
) -> None:
    response = api.post(
        "/v1/jobs",
        content=b'{"url": "http://127.0.0.1:9/", "body": "\xff"}',
        headers={"Content-Type": "application/json"},
    )

    assert (response.status_code, response.json()["error"]["code"]) == (400, "invalid_encoding")
