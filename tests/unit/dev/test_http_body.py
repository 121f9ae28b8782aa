"""Request bodies framed with Content-Length or Transfer-Encoding: chunked, read whole and only once."""

from __future__ import annotations

import io
import json
import socket
from collections.abc import Iterator

import httpx
import pytest

from hookline_local.gateway import GatewayServer, HttpRequest, HttpResponse
from hookline_local.http_body import MAX_BODY_BYTES, BodyError, read_body
from hookline_local.template import gateway_responses, load_template


def test_given_chunked_body_with_extension_and_trailer_when_read_then_whole_and_next_request_left() -> None:
    stream = io.BytesIO(
        b"5;name=x\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\nGET /next HTTP/1.1\r\n"
    )

    body = read_body(stream, {"Transfer-Encoding": "chunked"})

    assert body == b"hello world"
    assert stream.read() == b"GET /next HTTP/1.1\r\n"


def test_given_content_length_when_read_then_exactly_that_many_bytes() -> None:
    stream = io.BytesIO(b'{"a": 1}GET')

    assert read_body(stream, {"Content-Length": "8"}) == b'{"a": 1}'
    assert stream.read() == b"GET"


@pytest.mark.parametrize(
    ("raw", "headers", "status"),
    [
        (b"zz\r\nab\r\n0\r\n\r\n", {"Transfer-Encoding": "chunked"}, 400),
        (b"5\r\nab", {"Transfer-Encoding": "chunked"}, 400),
        (b"", {"Transfer-Encoding": "gzip"}, 501),
        (b"", {"Content-Length": str(MAX_BODY_BYTES + 1)}, 413),
        (b"abc", {"Content-Length": "5"}, 400),
    ],
    ids=["bad-size", "truncated", "other-coding", "too-large", "short"],
)
def test_given_malformed_body_when_read_then_body_error_with_status(
    raw: bytes, headers: dict[str, str], status: int
) -> None:
    with pytest.raises(BodyError) as raised:
        read_body(io.BytesIO(raw), headers)
    assert raised.value.status == status


class _Echo:
    """Answers every request with its own body, so a test sees what the server read."""

    def handle(self, request: HttpRequest) -> HttpResponse:
        return HttpResponse(200, [("Content-Type", "text/plain")], request.body)


@pytest.fixture
def echo_url() -> Iterator[str]:
    server = GatewayServer(_Echo(), port=0)
    server.start()
    yield server.url
    server.stop()


def _exchange(sock: socket.socket, request: bytes) -> bytes:
    sock.sendall(request)
    answer = b""
    while b"\r\n\r\n" not in answer:
        answer += sock.recv(65536)
    head, _, rest = answer.partition(b"\r\n\r\n")
    length = int(
        next(
            line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
        )
    )
    while len(rest) < length:
        rest += sock.recv(65536)
    return head.split(b"\r\n")[0] + b"\n" + rest


def test_given_chunked_post_on_keep_alive_connection_when_served_then_body_arrives_and_next_request_is_served(
    echo_url: str,
) -> None:
    port = int(echo_url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        first = _exchange(
            sock,
            b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            b'7\r\n{"a":1}\r\n0\r\n\r\n',
        )
        second = _exchange(sock, b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok")

    assert first == b'HTTP/1.1 200 OK\n{"a":1}'
    assert second == b"HTTP/1.1 200 OK\nok"


def test_given_httpx_streaming_body_when_posted_then_server_reads_it(echo_url: str) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"url": '
        yield b'"http://127.0.0.1:9/"}'

    response = httpx.post(f"{echo_url}/v1/jobs", content=chunks(), timeout=5)

    assert response.text == '{"url": "http://127.0.0.1:9/"}'


def test_given_a_body_over_the_limit_when_served_with_the_templates_responses_then_413_in_the_envelope() -> (
    None
):
    server = GatewayServer(_Echo(), port=0, gateway_responses=gateway_responses(load_template()))
    server.start()
    try:
        port = int(server.url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            head = f"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: {MAX_BODY_BYTES + 1}\r\n\r\n".encode()
            status, _, body = _exchange(sock, head).partition(b"\n")
    finally:
        server.stop()

    assert status.split()[1] == b"413"
    assert json.loads(body)["error"]["code"] == "payload_too_large"
