"""The callback client's connections: whose callbacks a kept-alive connection carries, when it is reused,
retried or dropped, and which of a name's addresses it goes to, against raw loopback servers."""

from __future__ import annotations

import itertools
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from hookline.adapters.http import client as client_module
from hookline.adapters.http.client import HttpCallbackClient
from hookline.domain.callbacks import CallbackRequest
from tests.support.raw_http import Handler, RawConnection, RawServer, replying

pytestmark = pytest.mark.integration

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
ACCEPTED = b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"
WAIT_S = 5.0  # generous bound on every wait for the other side: the machine may be loaded


@pytest.fixture
def client() -> Iterator[HttpCallbackClient]:
    with HttpCallbackClient(allow_loopback=True) as shared:
        yield shared


def post(url: str, tenant: str = "t1") -> CallbackRequest:
    return CallbackRequest(url=url, method="POST", headers={}, body=b"{}", timeout_s=5.0, tenant=tenant)


def serving(*answers: bytes) -> Handler:
    """Returns a handler that answers one request after another on the same connection, then closes it."""

    def handle(connection: RawConnection) -> None:
        for raw in answers:
            if not connection.read_request() or not connection.send(raw):
                return

    return handle


def by_connection(*handlers: Handler) -> Handler:
    """Returns a handler that serves the n-th connection with the n-th handler (the last one thereafter)."""
    order = itertools.count()

    def handle(connection: RawConnection) -> None:
        handlers[min(next(order), len(handlers) - 1)](connection)

    return handle


def wait_until_an_idle_connection_is_stale(client: HttpCallbackClient) -> None:
    """Waits until the calling thread's pool holds a connection with unread bytes (or the peer's close)."""
    pool = client._thread_pool()  # the pool of this thread, which made the deliveries
    deadline_s = time.monotonic() + WAIT_S
    while not any(connection.is_stale() for connection in pool._idle):
        assert time.monotonic() < deadline_s, "the receiver's stray bytes never arrived"
        time.sleep(0.005)


# -- whose callbacks a connection carries, and bytes nobody asked for ----------------------------------------


def test_given_two_tenants_calling_one_host_when_delivered_then_each_tenant_keeps_its_own_connection() -> (
    None
):
    with (
        RawServer(serving(OK, OK, OK)) as server,
        HttpCallbackClient(allow_loopback=True) as client,  # closed first: no handler waits for it
    ):
        first_a = client.deliver(post(server.url(), tenant="a"))
        then_b = client.deliver(post(server.url(), tenant="b"))
        again_a = client.deliver(post(server.url(), tenant="a"))

    assert [r.status_code for r in (first_a, then_b, again_a)] == [200, 200, 200]
    # b never rides a's connection (a's receiver could have queued an answer on it); a reuses its own.
    assert len(server.connections) == 2


@pytest.mark.parametrize(
    "stray",
    [b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", b"\r\n"],
    ids=["smuggled-response", "lone-crlf"],
)
def test_given_stray_bytes_after_a_complete_answer_when_the_next_job_goes_then_a_new_connection_answers_it(
    client: HttpCallbackClient, stray: bytes
) -> None:
    delivered = threading.Event()

    def answer_then_stray(connection: RawConnection) -> None:
        connection.read_request()
        connection.send(OK)
        delivered.wait(WAIT_S)  # the client has read the whole answer and pooled the connection
        connection.send(stray)
        if connection.read_request():  # reached only if the connection were reused
            connection.send(b"HTTP/1.1 500 Reused\r\nContent-Length: 0\r\n\r\n")

    with RawServer(by_connection(answer_then_stray, serving(ACCEPTED))) as server:
        first = client.deliver(post(server.url()))
        delivered.set()
        wait_until_an_idle_connection_is_stale(client)
        second = client.deliver(post(server.url()))

    assert (first.status_code, second.status_code, second.error_class) == (200, 202, None)
    assert len(server.connections) == 2


# -- a reused connection the server closed -------------------------------------------------------------------


def test_given_a_kept_connection_closed_as_the_next_request_arrives_when_delivered_then_sent_once_more_fresh(
    client: HttpCallbackClient,
) -> None:
    def answer_then_drop_the_next(connection: RawConnection) -> None:
        connection.read_request()
        connection.send(OK)
        connection.read_request()  # the idle timeout struck as this request arrived: closed, unanswered

    with RawServer(by_connection(answer_then_drop_the_next, serving(ACCEPTED))) as server:
        first = client.deliver(post(server.url()))
        second = client.deliver(post(server.url()))

    assert (first.status_code, second.status_code, second.error_class) == (200, 202, None)
    assert len(server.connections) == 2


@pytest.mark.parametrize(
    "partial",
    [b"HTTP/1.1 2", b"HTTP/1.1 200 OK\r\n"],
    ids=["inside-the-status-line", "inside-the-headers"],
)
def test_given_a_kept_connection_closed_after_answering_in_part_when_delivered_then_not_sent_again(
    client: HttpCallbackClient, partial: bytes
) -> None:
    # The receiver had begun to answer: it got the request, so the attempt fails and is retried later.
    def answer_then_break_the_next(connection: RawConnection) -> None:
        connection.read_request()
        connection.send(OK)
        connection.read_request()
        connection.send(partial)

    with RawServer(by_connection(answer_then_break_the_next, serving(ACCEPTED))) as server:
        client.deliver(post(server.url()))
        second = client.deliver(post(server.url()))

    assert (second.status_code, second.error_class, second.retryable) == (None, "transport_error", True)
    assert len(server.connections) == 1


def test_given_a_new_connection_closed_without_an_answer_when_delivered_then_not_sent_again(
    client: HttpCallbackClient,
) -> None:
    with RawServer(replying(b"")) as server:
        result = client.deliver(post(server.url()))
        assert server.wait_done(timeout_s=WAIT_S)

    assert (result.status_code, result.error_class) == (None, "transport_error")
    assert len(server.connections) == 1


# -- how long a connection is kept ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("keep_alive", "connections"),
    [(b"timeout=1", 2), (b"timeout=5, max=100", 1), (b"max=100", 1)],
    ids=["closes-within-a-second", "five-seconds", "no-timeout"],
)
def test_given_a_keep_alive_timeout_when_delivered_again_then_kept_only_if_it_outlasts_a_margin(
    client: HttpCallbackClient, keep_alive: bytes, connections: int
) -> None:
    answer = b"HTTP/1.1 200 OK\r\nKeep-Alive: " + keep_alive + b"\r\nContent-Length: 2\r\n\r\nok"
    with RawServer(serving(answer, answer)) as server:
        results = [client.deliver(post(server.url())) for _ in range(2)]

    assert [r.status_code for r in results] == [200, 200]
    assert len(server.connections) == connections


# -- which addresses -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "addresses",
    [["127.0.0.2", "127.0.0.1"], ["::1", "127.0.0.1"], ["127.0.0.3", "127.0.0.2", "127.0.0.1"]],
    ids=["one-dead-ipv4-first", "ipv6-first-without-a-listener", "two-dead-first"],
)
def test_given_a_name_whose_first_addresses_refuse_when_delivered_then_the_next_checked_address_answers(
    addresses: list[str],
) -> None:
    with (
        RawServer(serving(OK)) as server,  # listens on 127.0.0.1 only
        HttpCallbackClient(allow_loopback=True, resolver=lambda host, port: addresses) as named,
    ):
        result = named.deliver(post(f"http://hooks.test:{server.port}/hook"))

    assert (result.status_code, result.error_class) == (200, None)
    assert len(server.connections) == 1


def test_given_a_first_address_that_never_answers_when_delivered_then_it_gets_its_share_and_the_next_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(client_module, "CONNECT_SHARE_MIN_S", 0.1)
    with (
        RawServer(serving(OK)) as server,
        socket.create_server(("127.0.0.2", server.port), backlog=0) as dead,
    ):
        # Linux drops SYNs to a listener whose accept queue is full: a connect to it hangs, like a dead host.
        fillers = [socket.socket() for _ in range(3)]
        for filler in fillers:
            filler.setblocking(False)
            filler.connect_ex(dead.getsockname())
        resolver = lambda host, port: ["127.0.0.2", "127.0.0.1"]  # noqa: E731
        try:
            with HttpCallbackClient(allow_loopback=True, resolver=resolver) as named:
                request = CallbackRequest(f"http://hooks.test:{server.port}/hook", "POST", {}, b"{}", 3.0)
                result = named.deliver(request)
        finally:
            for filler in fillers:
                filler.close()

    # The dead address had half of the 3 s (the time left over the addresses left), not all of it.
    assert (result.status_code, result.error_class) == (200, None)
    assert len(server.connections) == 1


def test_given_every_address_refuses_when_delivered_then_connect_error() -> None:
    with (
        RawServer(serving(OK)) as server,
        HttpCallbackClient(
            allow_loopback=True, resolver=lambda host, port: ["127.0.0.2", "127.0.0.3"]
        ) as named,
    ):
        result = named.deliver(post(f"http://hooks.test:{server.port}/hook"))

    assert (result.status_code, result.error_class, result.retryable) == (None, "connect_error", True)
    assert server.connections == []


def test_given_an_ipv6_receiver_when_delivered_by_literal_and_by_name_then_both_arrive() -> None:
    with (
        RawServer(serving(OK, OK), host="::1") as server,
        HttpCallbackClient(allow_loopback=True, resolver=lambda host, port: ["::1"]) as client,
    ):
        by_literal = client.deliver(post(server.url()))
        by_name = client.deliver(post(f"http://hooks.test:{server.port}/hook"))

    assert server.url().startswith("http://[::1]:")
    assert [(r.status_code, r.response_preview) for r in (by_literal, by_name)] == [(200, "ok")] * 2
    assert len(server.connections) == 2  # another host name: never the literal's connection


# -- what a status means -------------------------------------------------------------------------------------


def test_given_304_when_delivered_then_a_permanent_non_2xx_status_not_a_refused_redirect(
    client: HttpCallbackClient,
) -> None:
    with RawServer(replying(b"HTTP/1.1 304 Not Modified\r\nLocation: /elsewhere\r\n\r\n")) as server:
        result = client.deliver(post(server.url()))

    assert (result.status_code, result.error_class, result.error_message) == (304, None, None)
    assert (result.succeeded, result.retryable) == (False, False)
