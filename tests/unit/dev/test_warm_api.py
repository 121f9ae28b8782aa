"""The deployed stack warms its API workers before the banner: warm_api sends that many requests at once,
each until it answers 200; `hookline dev --warm-api-workers` and HOOKLINE_DEV_WARM_API_WORKERS say how
many."""

from __future__ import annotations

import argparse
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from hookline_local import deployed
from hookline_local.cli import add_dev_commands
from hookline_local.deploy import DeployError

# Long enough never to end a barrier that the warm-up fills; a broken barrier fails the test.
BARRIER_WAIT_S = 30


class Workers(ThreadingHTTPServer):
    """Answers GET /healthz once `expected` requests are in flight together (as cold workers would be)."""

    daemon_threads = True

    def __init__(self, expected: int, failures_first: int = 0) -> None:
        super().__init__(("127.0.0.1", 0), Healthz)
        self.together = threading.Barrier(expected, timeout=BARRIER_WAIT_S)
        self.failures_left = failures_first
        self.answered = 0
        self.broken = False
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Healthz(BaseHTTPRequestHandler):
    server: Workers

    def do_GET(self) -> None:
        workers = self.server
        with workers.lock:
            failing = workers.failures_left > 0
            workers.failures_left -= 1
        if failing:
            self.send_response(504)  # a cold start longer than API Gateway waits
        else:
            try:
                workers.together.wait()
            except threading.BrokenBarrierError:
                workers.broken = True
            with workers.lock:
                workers.answered += 1
            self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def serving() -> Iterator[list[Workers]]:
    started: list[Workers] = []
    yield started
    for server in started:
        server.shutdown()
        server.server_close()


def serve(started: list[Workers], expected: int, failures_first: int = 0) -> Workers:
    server = Workers(expected, failures_first)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    started.append(server)
    return server


def test_given_ten_workers_when_warming_then_ten_requests_are_in_flight_together(
    serving: list[Workers],
) -> None:
    workers = serve(serving, 10)

    deployed.warm_api(workers.url, 10)

    assert (workers.answered, workers.broken) == (10, False)


def test_given_a_gateway_timeout_when_warming_then_that_request_is_sent_again(serving: list[Workers]) -> None:
    workers = serve(serving, 1, failures_first=1)

    deployed.warm_api(workers.url, 1)

    assert workers.answered == 1


def test_given_no_200_within_the_timeout_then_deploy_error(
    serving: list[Workers], monkeypatch: pytest.MonkeyPatch
) -> None:
    workers = serve(serving, 1, failures_first=1_000_000)
    monkeypatch.setattr(deployed, "WARM_TIMEOUT_S", 0.2)

    with pytest.raises(DeployError, match="GET /healthz"):
        deployed.warm_api(workers.url, 2)


def dev_arguments(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_dev_commands(parser.add_subparsers())
    return parser.parse_args(["dev", *argv])


def test_given_no_setting_then_the_stack_warms_the_default_number_of_api_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HOOKLINE_DEV_WARM_API_WORKERS", raising=False)

    assert dev_arguments().warm_api_workers == deployed.DEFAULT_WARM_API_WORKERS == 10


def test_given_the_environment_or_the_option_then_it_sets_the_api_workers_warmed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HOOKLINE_DEV_WARM_API_WORKERS", "1")

    assert dev_arguments().warm_api_workers == 1
    assert dev_arguments("--warm-api-workers", "3").warm_api_workers == 3
