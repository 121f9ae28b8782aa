"""The loopback forwarder in front of the deployed API: requests go upstream as sent, answers come back."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from hookline_local.forwarder import Forwarder
from hookline_local.gateway import GatewayServer, HttpRequest, HttpResponse
from tests.support.receiver import Receiver, Reply


@pytest.fixture
def upstream() -> Iterator[Receiver]:
    with Receiver() as receiver:
        yield receiver


@pytest.fixture
def forwarded(upstream: Receiver) -> Iterator[str]:
    def local(request: HttpRequest) -> HttpResponse:
        return HttpResponse.json(200, {"local": request.target})

    forwarder = Forwarder(upstream.url("/_aws/execute-api/abcd1234/dev"), {"/dev/sink": local})
    server = GatewayServer(forwarder, port=0)
    server.start()
    yield server.url
    server.stop()
    forwarder.close()


def test_given_request_when_forwarded_then_upstream_gets_stage_path_query_headers_and_body(
    upstream: Receiver, forwarded: str
) -> None:
    upstream.script(
        "/_aws/execute-api/abcd1234/dev/v1/jobs?limit=2", [Reply(201, {"X-Up": "1"}, b'{"id":"j"}')]
    )

    response = httpx.post(
        f"{forwarded}/v1/jobs?limit=2",
        content=b'{"url":"u"}',
        headers={"Authorization": "Bearer k"},
        timeout=5,
    )

    [seen] = upstream.requests
    assert (seen.method, seen.path, seen.body) == (
        "POST",
        "/_aws/execute-api/abcd1234/dev/v1/jobs?limit=2",
        b'{"url":"u"}',
    )
    assert seen.headers["authorization"] == "Bearer k"
    assert seen.headers["x-forwarded-for"] == "127.0.0.1"
    assert (response.status_code, response.content, response.headers["x-up"]) == (201, b'{"id":"j"}', "1")


def test_given_local_route_when_requested_then_served_here_and_not_forwarded(
    upstream: Receiver, forwarded: str
) -> None:
    response = httpx.get(f"{forwarded}/dev/sink", timeout=5)

    assert response.json() == {"local": "/dev/sink"}
    assert upstream.requests == []


def test_given_upstream_down_when_requested_then_502() -> None:
    server = GatewayServer(Forwarder("http://127.0.0.1:9/_aws/execute-api/x/dev"), port=0)
    server.start()
    try:
        response = httpx.get(f"{server.url}/healthz", timeout=5)
    finally:
        server.stop()

    assert response.status_code == 502


def test_given_many_sequential_requests_then_upstream_connections_are_reused(
    upstream: Receiver, forwarded: str
) -> None:
    with httpx.Client(base_url=forwarded, timeout=5) as client:
        statuses = [client.get("/healthz").status_code for _ in range(20)]

    assert statuses == [200] * 20
    assert len(upstream.requests) == 20
