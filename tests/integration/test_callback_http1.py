"""The callback client's own HTTP/1.1 (adapters/http/http1.py): framing, keep-alive and when a connection is
not reused, against raw loopback servers that answer several requests on one connection."""

from __future__ import annotations

import os
import resource
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hookline.adapters.http.client import HttpCallbackClient
from hookline.adapters.http.http1 import Connection, Endpoint, encode_request
from hookline.adapters.sockets import idle_socket_unusable
from hookline.domain.callbacks import CallbackRequest
from tests.integration.test_callback_client import tls_contexts_for
from tests.support.raw_http import Handler, RawConnection, RawServer

pytestmark = pytest.mark.integration

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
LONG_BODY_BYTES = 4 * 1024 * 1024  # more than one read takes, so the client stops before its end
CHUNKED = (
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;ext=1\r\nok\r\n3\r\n!!!\r\n0\r\nX-T: 1\r\n\r\n"
)


@pytest.fixture
def client() -> Iterator[HttpCallbackClient]:
    with HttpCallbackClient(allow_loopback=True) as shared:
        yield shared


def post(url: str, method: str = "POST") -> CallbackRequest:
    return CallbackRequest(url=url, method=method, headers={}, body=b'{"n": 1}', timeout_s=5.0)


def serving(*answers: bytes) -> Handler:
    """Returns a handler that answers one request after another on the same connection, then closes it."""

    def handle(connection: RawConnection) -> None:
        for raw in answers:
            if not connection.read_request() or not connection.send(raw):
                return

    return handle


def test_given_keep_alive_answers_when_delivered_three_times_then_one_connection_serves_them(
    client: HttpCallbackClient,
) -> None:
    with RawServer(serving(OK, OK, OK)) as server:
        results = [client.deliver(post(server.url())) for _ in range(3)]

    assert [(r.status_code, r.response_preview) for r in results] == [(200, "ok")] * 3
    assert len(server.connections) == 1


@pytest.mark.parametrize(
    "first",
    [
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
        b"HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 2\r\n\r\nok",
        b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
        # Bytes past the body would be read as the next answer.
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n",
        # Both framings: the message is suspect (request smuggling), so the chunked body is read, then closed.
        b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
        # A body well past the preview is not read to its end.
        b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % LONG_BODY_BYTES + b"o" * LONG_BODY_BYTES,
    ],
    ids=[
        "connection-close",
        "close-among-tokens",
        "http-1.0",
        "bytes-after-body",
        "cl-and-te",
        "past-preview",
    ],
)
def test_given_an_answer_that_forbids_reuse_when_delivered_again_then_a_new_connection_is_used(
    client: HttpCallbackClient, first: bytes
) -> None:
    with RawServer(serving(first, OK)) as server:
        one = client.deliver(post(server.url()))
        two = client.deliver(post(server.url()))

    assert (one.status_code, one.error_class, two.status_code) == (200, None, 200)
    assert (one.response_preview or "").startswith("o")
    assert len(server.connections) == 2


@pytest.mark.parametrize(
    ("answer", "preview"),
    [
        (CHUNKED, "ok!!!"),
        (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + OK, "ok"),
        (b"HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n", ""),
        (b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n", ""),
        (b"HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok", "ok"),  # no reason phrase
        # A line may end with a bare LF (RFC 9112 2.2), as h11 reads it too.
        (b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok", "ok"),
        (b"HTTP/1.1 100 Continue\n\nHTTP/1.1 200 OK\r\nContent-Length: 2\n\r\nok", "ok"),
        # Codings before the final chunked are not undone: the preview keeps their bytes.
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\n\x1f\x8b\r\n0\r\n\r\n",
            "\x1f\ufffd",
        ),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: Chunked\r\n\r\n0\r\n\r\n", ""),
    ],
    ids=[
        "chunked-with-extension-and-trailer",
        "informational-first",
        "204-no-body",
        "empty-body",
        "no-reason",
        "bare-lf",
        "bare-lf-and-crlf-mixed",
        "gzip-then-chunked",
        "gzip-then-chunked-in-two-headers",
    ],
)
def test_given_a_well_framed_answer_when_delivered_then_read_exactly_and_the_connection_reused(
    client: HttpCallbackClient, answer: bytes, preview: str
) -> None:
    with RawServer(serving(answer, OK)) as server:
        first = client.deliver(post(server.url()))
        second = client.deliver(post(server.url()))

    assert (first.error_class, first.response_preview, second.response_preview) == (None, preview, "ok")
    assert len(server.connections) == 1


@pytest.mark.parametrize(
    ("answer", "status", "preview"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", 200, "short"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 200, ""),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nok", 200, "ok"),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nbad trailer\r\n\r\n",
            200,
            "ok",
        ),
        (b"HTTP/1.1 201 Created\r\nTransfer-Encoding: gzip\r\n\r\nzipped", 201, "zipped"),  # until close
        (b"HTTP/1.1 503 Busy\r\nContent-Length: 10\r\n\r\nbus", 503, "bus"),
    ],
    ids=[
        "short-body",
        "bad-chunk-size",
        "closed-inside-a-chunk",
        "bad-trailer",
        "gzip-until-close",
        "short-503",
    ],
)
def test_given_a_body_that_breaks_after_a_valid_status_when_delivered_then_the_status_is_the_outcome(
    client: HttpCallbackClient, answer: bytes, status: int, preview: str
) -> None:
    # The receiver answered with its status line: a 2xx accepted the callback, and retrying it would deliver
    # it again; whatever went wrong with the body says nothing about that.
    with RawServer(serving(answer)) as server:
        result = client.deliver(post(server.url()))

    assert (result.status_code, result.error_class, result.response_preview) == (status, None, preview)
    assert result.succeeded is (status < 300)


def test_given_head_request_when_the_answer_has_a_length_then_no_body_is_awaited(
    client: HttpCallbackClient,
) -> None:
    head_answer = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"
    with RawServer(serving(head_answer, OK)) as server:
        head = client.deliver(post(server.url(), method="HEAD"))
        after = client.deliver(post(server.url()))

    assert (head.status_code, head.error_class, head.response_preview) == (200, None, "")
    assert (after.status_code, after.response_preview) == (200, "ok")
    assert len(server.connections) == 1


def test_given_the_receiver_closed_an_idle_connection_when_delivered_again_then_a_new_one_is_used(
    client: HttpCallbackClient,
) -> None:
    def one_answer_then_close(connection: RawConnection) -> None:
        connection.read_request()
        connection.send(OK)  # keep-alive allowed, but the handler returns: the server closes the socket

    with RawServer(one_answer_then_close) as server:
        first = client.deliver(post(server.url()))
        assert server.wait_done(timeout_s=5.0)
        second = client.deliver(post(server.url()))

    # Sending on the closed connection would fail the attempt; the pool sees the close and reconnects.
    assert (first.status_code, second.status_code, second.error_class) == (200, 200, None)
    assert len(server.connections) == 2


def test_given_more_informational_answers_than_allowed_when_delivered_then_transport_error(
    client: HttpCallbackClient,
) -> None:
    with RawServer(serving(b"HTTP/1.1 100 Continue\r\n\r\n" * 20 + OK)) as server:
        result = client.deliver(post(server.url()))

    assert (result.status_code, result.error_class, result.retryable) == (None, "transport_error", True)


def test_given_a_descriptor_past_1024_when_checked_idle_then_usable_until_the_peer_closes() -> None:
    # select() refuses descriptors past FD_SETSIZE (1024): a check built on it called every kept-alive
    # connection of a busy process closed, and so opened a new one for every call.
    high_fd = 1500
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] <= high_fd:
        pytest.skip(f"this process may not open descriptor {high_fd}")
    ours, peer = socket.socketpair()
    os.dup2(ours.fileno(), high_fd)
    ours.close()
    with socket.socket(fileno=high_fd) as idle, peer:
        assert not idle_socket_unusable(idle)
        peer.close()
        assert idle_socket_unusable(idle)


def test_given_tls_and_requests_past_the_socket_buffers_when_delivered_three_times_then_one_connection(
    tmp_path: Path,
) -> None:
    # The socket is non-blocking (wire.py waits with its own poll): over TLS a send that would block and a
    # response that arrives in two records make it wait for writing and for reading on the TLS socket.
    server_tls, client_tls = tls_contexts_for("hooks.test", tmp_path)
    body = b"x" * (200 * 1024)  # far past the server's 4 KiB receive buffer
    requests: list[bytes] = []

    def answer_in_two_records(connection: RawConnection) -> None:
        for _ in range(3):
            time.sleep(0.05)  # the client's send fills the buffers and waits meanwhile
            requests.append(connection.read_request())
            connection.send(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n")
            time.sleep(0.05)  # the client read the head and waits for the body
            connection.send(b"ok")

    with (
        RawServer(answer_in_two_records, tls=server_tls, receive_buffer=4096) as server,
        HttpCallbackClient(
            allow_loopback=True, resolver=lambda host, port: ["127.0.0.1"], ssl_context=client_tls
        ) as tls_client,
    ):
        request = CallbackRequest(f"https://hooks.test:{server.port}/hook", "POST", {}, body, timeout_s=5.0)
        results = [tls_client.deliver(request) for _ in range(3)]

    assert [(r.status_code, r.response_preview) for r in results] == [(200, "ok")] * 3
    assert [len(r.partition(b"\r\n\r\n")[2]) for r in requests] == [len(body)] * 3
    assert len(server.connections) == 1


@pytest.mark.parametrize("secure", [False, True], ids=["plain", "tls"])
def test_given_a_request_far_past_the_socket_buffers_when_exchanged_then_sent_whole_waiting_for_the_reader(
    tmp_path: Path, secure: bool
) -> None:
    # wire.Connection sends on a non-blocking socket: a request the buffers cannot hold makes it wait for
    # writing (BlockingIOError, or SSLWantWriteError over TLS) until the slow reader takes the rest.
    server_tls, client_tls = tls_contexts_for("hooks.test", tmp_path)
    ours, theirs = socket.socketpair()
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    theirs.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    body = b"x" * (1024 * 1024)
    received: list[bytes] = []

    def serve(sock: socket.socket) -> None:
        if secure:
            sock = server_tls.wrap_socket(sock, server_side=True)
        with sock:
            time.sleep(0.1)  # the client has filled the buffers by now
            received.append(RawConnection(sock, threading.Event()).read_request())
            sock.sendall(OK)

    server = threading.Thread(target=serve, args=(theirs,))
    server.start()
    if secure:
        ours = client_tls.wrap_socket(ours, server_hostname="hooks.test")
    ours.setblocking(False)
    connection = Connection(ours, Endpoint("https" if secure else "http", "hooks.test", 443, "127.0.0.1"))
    head = encode_request(
        "POST", "/hook", [(b"Host", b"hooks.test"), (b"Content-Length", b"%d" % len(body))], body
    )
    try:
        response, reusable = connection.exchange(head, body, "POST", 100, time.monotonic() + 10)
    finally:
        server.join(timeout=10)
        connection.close()

    assert (response.status, response.preview, reusable) == (200, b"ok", True)
    assert len(received[0].partition(b"\r\n\r\n")[2]) == len(body)
