"""The submit handler over real HTTP on 127.0.0.1: requests become proxy events, as API Gateway makes them."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from werkzeug.serving import make_server

from tests.integration.api.conftest import TENANT, Api
from tests.support.apigw import wsgi_app

# Each request also goes as an HTTP API event (payload format 2.0).
pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("payload_format")]


@pytest.fixture
def base_url(api: Api) -> Iterator[str]:
    """Serves the handler on a free loopback port while the test runs."""
    server = make_server("127.0.0.1", 0, wsgi_app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def call(
    method: str, url: str, key: str | None = None, body: object = None
) -> tuple[int, dict[str, str], Any]:
    """Sends one HTTP request; returns status, lower-cased headers and the JSON body."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if key is not None:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status, headers, raw = response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        with error:
            status, headers, raw = error.code, dict(error.headers), error.read()
    return status, {k.lower(): v for k, v in headers.items()}, json.loads(raw)


def test_given_http_client_when_using_the_api_then_submit_get_list_cancel_and_errors_work(
    api: Api, base_url: str
) -> None:
    key = api.acme.api_key

    created = call("POST", f"{base_url}/v1/jobs", key, {"url": "http://127.0.0.1:9/x", "delay_s": 60})
    job_id = created[2]["id"]
    fetched = call("GET", f"{base_url}/v1/jobs/{job_id}", key)
    listed = call("GET", f"{base_url}/v1/jobs?limit=1&status=scheduled", key)
    cancelled = call("DELETE", f"{base_url}/v1/jobs/{job_id}", key)
    anonymous = call("GET", f"{base_url}/v1/jobs", None)
    health = call("GET", f"{base_url}/healthz")

    assert (created[0], fetched[0], fetched[2]["status"]) == (201, 200, "scheduled")
    assert [job["id"] for job in listed[2]["jobs"]] == [job_id]
    assert (cancelled[0], cancelled[2]["status"]) == (200, "cancelled")
    assert (anonymous[0], anonymous[2]["error"]["code"]) == (401, "unauthorized")
    assert anonymous[1]["x-request-id"]
    assert (health[0], health[2]["status"]) == (200, "ok")
    assert api.container.jobs.get(TENANT, job_id).status.value == "cancelled"


def test_given_invalid_utf8_inside_a_json_string_when_posted_over_http_then_400_and_nothing_stored(
    api: Api, base_url: str
) -> None:
    # 0xc3 opens a two-byte UTF-8 sequence that 0x28 cannot continue. Decoded as text by the gateway, it
    # would arrive as U+FFFD and be stored as a payload the client never sent.
    raw = b'{"url": "http://127.0.0.1:9/hook", "body": {"name": "caf\xc3\x28"}}'
    request = urllib.request.Request(f"{base_url}/v1/jobs", data=raw, method="POST")
    request.add_header("Content-Type", "application/json")
    request.add_header("Authorization", f"Bearer {api.acme.api_key}")

    with pytest.raises(urllib.error.HTTPError) as refused, urllib.request.urlopen(request, timeout=10):
        pass

    with refused.value as error:
        assert (error.code, json.loads(error.read())["error"]["code"]) == (400, "invalid_encoding")
    assert api.container.manager.list_jobs(TENANT, None, None, 10).jobs == []
