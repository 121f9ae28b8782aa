"""The dev moto server's HTTP front: keep-alive connections, one request at a time, WSGI underneath."""

from __future__ import annotations

import http.client
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from hookline_local.serial_http import SerialHttpServer

Served = tuple[SerialHttpServer, list[str]]


def echo(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    """Answers with what the request looked like to a WSGI application."""
    if environ["PATH_INFO"] == "/fail":
        raise RuntimeError("the application failed")
    body = environ["wsgi.input"].read()
    document = {
        "method": environ["REQUEST_METHOD"],
        "path": environ["PATH_INFO"],
        "query": environ["QUERY_STRING"],
        "target": environ.get("HTTP_X_AMZ_TARGET"),
        "content_type": environ.get("CONTENT_TYPE"),
        "body": body.decode(),
        "peer": environ["REMOTE_ADDR"],
    }
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", "999")])
    return [json.dumps(document).encode()]


@pytest.fixture
def served() -> Iterator[Served]:
    """Yields a server on a free loopback port running in a thread, and its access log lines."""
    lines: list[str] = []
    server = SerialHttpServer("127.0.0.1", 0, echo, log=lines.append)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval_s": 0.05}, daemon=True)
    thread.start()
    yield server, lines
    server.shutdown()
    thread.join(timeout=5)
    assert not thread.is_alive()


@pytest.fixture
def connection(served: Served) -> Iterator[http.client.HTTPConnection]:
    """Yields an HTTP/1.1 client connection to the server, closed afterwards."""
    connection = http.client.HTTPConnection(*served[0].server_address, timeout=5)
    yield connection
    connection.close()


def _connect(server: SerialHttpServer) -> socket.socket:
    sock = socket.create_connection(server.server_address, timeout=5)
    return sock


def _read_response(sock: socket.socket) -> tuple[int, str | None, bytes]:
    """Reads one response from sock: its status, Connection header and body."""
    response = http.client.HTTPResponse(sock)
    try:
        response.begin()
        return response.status, response.getheader("Connection"), response.read()
    finally:
        response.close()


def test_given_one_connection_when_requests_follow_each_other_then_all_are_answered_on_it(
    served: Served, connection: http.client.HTTPConnection
) -> None:
    _, lines = served
    sockets = set()

    answers = []
    for n in range(3):
        connection.request("POST", f"/?n={n}", body=f"body {n}", headers={"X-Amz-Target": "DynamoDB.PutItem"})
        response = connection.getresponse()
        answers.append((response.status, response.getheader("Connection"), json.loads(response.read())))
        sockets.add(id(connection.sock))

    assert [status for status, _, _ in answers] == [200, 200, 200]
    assert {kept for _, kept, _ in answers} == {"keep-alive"}
    assert [(a["query"], a["body"], a["target"]) for _, _, a in answers] == [
        (f"n={n}", f"body {n}", "DynamoDB.PutItem") for n in range(3)
    ]
    assert len(sockets) == 1  # one socket carried all three
    assert len(lines) == 3
    assert '"POST /?n=0 HTTP/1.1" 200' in lines[0]


def test_given_an_aws_call_when_logged_then_its_line_names_the_operation(
    served: Served, connection: http.client.HTTPConnection
) -> None:
    _, lines = served

    connection.request("POST", "/", body="{}", headers={"X-Amz-Target": "DynamoDB_20120810.UpdateItem"})
    connection.getresponse().read()
    connection.request("GET", "/moto-api/")
    connection.getresponse().read()

    # The bench counts DynamoDB requests by operation from these lines (bench/compare/dynamo_units.py).
    assert lines[0].endswith('"POST / HTTP/1.1" 200 - DynamoDB_20120810.UpdateItem')
    assert lines[1].endswith('"GET /moto-api/ HTTP/1.1" 200 -')


def test_given_the_server_sets_content_length_when_answering_then_it_is_the_real_length(
    connection: http.client.HTTPConnection,
) -> None:
    connection.request("GET", "/x")
    response = connection.getresponse()
    body = response.read()

    assert int(response.getheader("Content-Length") or -1) == len(body)
    assert json.loads(body)["method"] == "GET"


def test_given_two_requests_in_one_write_when_served_then_both_answered_in_order(served: Served) -> None:
    server, _ = served
    with _connect(server) as sock:
        sock.sendall(
            b"POST /first HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\na"
            b"POST /second HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nbc"
        )
        sock.shutdown(socket.SHUT_WR)  # the server answers both, then sees the end and closes
        received = b""
        while chunk := sock.recv(65536):
            received += chunk

    answers = [part for part in received.split(b"HTTP/1.1 ") if part]
    assert [answer.split(b"\r\n")[0] for answer in answers] == [b"200 OK", b"200 OK"]
    bodies = [json.loads(answer.split(b"\r\n\r\n", 1)[1]) for answer in answers]
    assert [(body["path"], body["body"]) for body in bodies] == [("/first", "a"), ("/second", "bc")]


def test_given_a_request_arriving_in_pieces_when_another_client_is_whole_then_that_one_is_not_held_up(
    served: Served,
) -> None:
    server, _ = served
    with _connect(server) as slow, _connect(server) as fast:
        slow.sendall(b"POST /slow HTTP/1.1\r\nHost: h\r\nContent-Len")
        fast.sendall(b"GET /fast HTTP/1.1\r\nHost: h\r\n\r\n")
        fast_body = json.loads(_read_response(fast)[2])
        slow.sendall(b"gth: 4\r\n\r\nab")
        slow.sendall(b"cd")
        slow_body = json.loads(_read_response(slow)[2])

    assert fast_body["path"] == "/fast"
    assert (slow_body["path"], slow_body["body"]) == ("/slow", "abcd")


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
        b"GET / HTTP/1.0\r\nHost: h\r\n\r\n",
    ],
)
def test_given_close_or_http_1_0_when_answered_then_the_connection_is_closed(
    served: Served, request_bytes: bytes
) -> None:
    server, _ = served
    with _connect(server) as sock:
        sock.sendall(request_bytes)
        status, kept, _ = _read_response(sock)
        rest = sock.recv(1024)

    assert status == 200
    assert kept == "close"
    assert rest == b""  # the server closed its side


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n", 411),
        (b"PUT / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n", 417),
        (b"NONSENSE\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nno colon here\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nContent-Length: many\r\n\r\n", 400),
    ],
)
def test_given_a_request_it_does_not_take_when_sent_then_refused_with_a_status_and_closed(
    served: Served, request_bytes: bytes, status: int
) -> None:
    server, _ = served
    with _connect(server) as sock:
        sock.sendall(request_bytes)
        answered, kept, _ = _read_response(sock)

    assert answered == status
    assert kept == "close"


def test_given_the_application_raises_when_requested_then_500_and_the_server_goes_on(
    served: Served, connection: http.client.HTTPConnection
) -> None:
    _, lines = served

    connection.request("GET", "/fail")
    failed = connection.getresponse()
    failed.read()
    connection.request("GET", "/after")
    after = connection.getresponse()

    assert failed.status == 500
    assert after.status == 200
    assert json.loads(after.read())["path"] == "/after"
    assert any("the application failed" in line for line in lines)


def test_given_head_when_answered_then_headers_only(
    connection: http.client.HTTPConnection,
) -> None:
    connection.request("HEAD", "/")
    response = connection.getresponse()

    assert response.status == 200
    assert response.read() == b""
    assert int(response.getheader("Content-Length") or 0) > 0


def test_given_percent_encoded_path_when_served_then_path_info_is_decoded(
    connection: http.client.HTTPConnection,
) -> None:
    connection.request("GET", "/moto-api/a%20b?x=%20")
    answer = json.loads(connection.getresponse().read())

    assert (answer["path"], answer["query"], answer["peer"]) == ("/moto-api/a b", "x=%20", "127.0.0.1")
