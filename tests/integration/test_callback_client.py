"""The HTTP callback client against a real loopback receiver."""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from standardwebhooks import Webhook

from hookline.adapters.http.client import ERROR_MESSAGE_CHARS, HttpCallbackClient
from hookline.domain.callbacks import CallbackRequest, CallbackResult
from hookline.domain.constants import RESPONSE_BODY_PREVIEW_BYTES
from hookline.domain.signing import callback_headers, new_signing_secret
from tests.fakes.clock import FrozenClock
from tests.support.raw_http import Handler, RawConnection, RawServer, replying
from tests.support.receiver import Receiver, Reply

pytestmark = pytest.mark.integration

NOW_MS = 1_700_000_000_000


@pytest.fixture
def client() -> Iterator[HttpCallbackClient]:
    with HttpCallbackClient(allow_loopback=True, clock=FrozenClock(NOW_MS)) as shared:
        yield shared


def post(url: str, body: bytes = b'{"ok": true}', timeout_s: float = 5.0, **headers: str) -> CallbackRequest:
    return CallbackRequest(url=url, method="POST", headers=headers, body=body, timeout_s=timeout_s)


def test_given_200_when_delivered_then_succeeded_with_preview(
    receiver: Receiver, client: HttpCallbackClient
) -> None:
    receiver.script("/hook", [Reply(200, body=b"thanks")])

    result = client.deliver(post(receiver.url()))

    assert result.succeeded
    assert (result.status_code, result.response_preview, result.error_class) == (200, "thanks", None)
    assert 0 <= result.latency_ms < 5000


def test_given_500_when_delivered_then_retryable(receiver: Receiver, client: HttpCallbackClient) -> None:
    receiver.script("/hook", [Reply(500, body=b"boom")])

    result = client.deliver(post(receiver.url()))

    assert (result.status_code, result.succeeded, result.retryable) == (500, False, True)
    assert result.response_preview == "boom"


def test_given_404_when_delivered_then_permanent(receiver: Receiver, client: HttpCallbackClient) -> None:
    receiver.script("/hook", [Reply(404)])

    result = client.deliver(post(receiver.url()))

    assert (result.status_code, result.succeeded, result.retryable) == (404, False, False)


@pytest.mark.parametrize(
    ("retry_after", "expected_s"),
    [
        ("120", 120.0),
        ("Tue, 14 Nov 2023 22:14:20 GMT", 60.0),
        ("Tue, 14 Nov 2023 22:00:00 GMT", 0.0),
        ("soon", None),
    ],
)
def test_given_429_with_retry_after_when_delivered_then_seconds_parsed(
    receiver: Receiver, client: HttpCallbackClient, retry_after: str, expected_s: float | None
) -> None:
    receiver.script("/hook", [Reply(429, headers={"Retry-After": retry_after})])

    result = client.deliver(post(receiver.url()))

    assert (result.status_code, result.retryable, result.retry_after_s) == (429, True, expected_s)


def test_given_slow_receiver_when_delivered_then_timeout_retryable(
    receiver: Receiver, client: HttpCallbackClient
) -> None:
    receiver.script("/hook", [Reply(200, delay_s=0.6)])

    result = client.deliver(post(receiver.url(), timeout_s=0.3))

    assert (result.error_class, result.status_code, result.retryable) == ("timeout", None, True)
    assert 250 <= result.latency_ms < 600


def test_given_body_trickling_after_a_200_when_delivered_then_cut_at_the_deadline_and_the_200_stands(
    client: HttpCallbackClient,
) -> None:
    # Each byte arrives well within the timeout, so only a whole-attempt deadline stops this; the receiver
    # had accepted the callback with its status line, so the cut body does not make it a failure.
    with trickling_server(byte_interval_s=0.05, body_bytes=100) as port:
        started = time.monotonic()
        result = client.deliver(post(f"http://127.0.0.1:{port}/hook", timeout_s=0.3))
        elapsed_s = time.monotonic() - started

    assert (result.status_code, result.error_class, result.succeeded) == (200, None, True)
    assert 0 < len(result.response_preview or "") < 100
    assert elapsed_s < 1.0


def test_given_closed_port_when_delivered_then_connect_error(client: HttpCallbackClient) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Nothing listens on the port once the probe socket is closed.

    result = client.deliver(post(f"http://127.0.0.1:{port}/hook"))

    assert (result.error_class, result.status_code, result.retryable) == ("connect_error", None, True)


@pytest.mark.parametrize(
    ("status", "location"),
    [
        (307, "/moved"),
        (302, "{same}/final"),
        (308, "http://localhost:{port}/x"),  # same machine, another host
        (301, "http://169.254.169.254/latest/meta-data/"),
        (303, "http://[::1"),  # not even a URL: urljoin raised on it
        (300, None),
    ],
)
def test_given_3xx_when_delivered_then_not_followed_and_permanent_with_its_status(
    receiver: Receiver, client: HttpCallbackClient, status: int, location: str | None
) -> None:
    headers = (
        {} if location is None else {"Location": location.format(same=receiver.url(""), port=receiver.port)}
    )
    receiver.script("/hook", [Reply(status, headers=headers, body=b"moved")])
    receiver.script("/moved", [Reply(200)])
    receiver.script("/final", [Reply(200)])

    result = client.deliver(post(receiver.url(), body=b"payload"))

    assert (result.status_code, result.error_class, result.succeeded, result.retryable) == (
        status,
        "redirect_refused",
        False,
        False,
    )
    assert result.response_preview == "moved"
    assert f"answered {status}" in (result.error_message or "")
    assert [(r.method, r.path) for r in receiver.requests] == [("POST", "/hook")]


def test_given_redirect_to_another_receiver_when_delivered_then_that_receiver_sees_nothing(
    receiver: Receiver, client: HttpCallbackClient
) -> None:
    with Receiver() as elsewhere:
        elsewhere.script("/x", [Reply(200)])
        receiver.script("/hook", [Reply(307, headers={"Location": elsewhere.url("/x")})])

        result = client.deliver(post(receiver.url()))

        # deliver is synchronous: a followed redirect would have been answered before it returned.
        assert (result.status_code, result.error_class) == (307, "redirect_refused")
        assert elsewhere.requests == []


def test_given_huge_response_when_delivered_then_only_preview_kept(
    receiver: Receiver, client: HttpCallbackClient
) -> None:
    receiver.script("/hook", [Reply(200, body=b"\xe2\x82\xac" * 3_000_000)])

    result = client.deliver(post(receiver.url()))

    assert result.status_code == 200
    assert result.response_preview is not None
    # 1024 bytes hold 341 whole euro signs; the cut third of one decodes as a replacement character.
    assert result.response_preview == "\u20ac" * 341 + "\ufffd"
    assert len(result.response_preview.encode()) <= RESPONSE_BODY_PREVIEW_BYTES + 2


def test_given_signed_request_when_delivered_then_headers_and_body_arrive_exactly(
    receiver: Receiver, client: HttpCallbackClient
) -> None:
    secret, body = new_signing_secret(), b'{"amount": 12.5, "currency": "EUR"}'
    signed = callback_headers(
        [secret], "job_abc", int(time.time()), body, 2, schedule_id="sch_1", fire_time_ms=NOW_MS
    )
    request = CallbackRequest(
        url=receiver.url("/orders?id=7"),
        method="PUT",
        headers={**signed, "Content-Type": "application/json", "X-Tenant-Tag": "blue"},
        body=body,
        timeout_s=5.0,
    )

    assert client.deliver(request).succeeded

    (seen,) = receiver.wait_for(1, timeout_s=2.0)
    assert (seen.method, seen.path, seen.body) == ("PUT", "/orders?id=7", body)
    assert seen.headers["host"] == f"127.0.0.1:{receiver.port}"
    assert seen.headers["content-length"] == str(len(body))
    assert seen.headers["x-tenant-tag"] == "blue"
    assert seen.headers["hookline-attempt"] == "2"
    assert seen.headers["hookline-schedule-id"] == "sch_1"
    for name, value in signed.items():
        assert seen.headers[name.lower()] == value
    Webhook(secret).verify(seen.body, seen.headers)


def test_given_loopback_not_allowed_when_delivered_then_unsafe_url_without_request(
    receiver: Receiver,
) -> None:
    with HttpCallbackClient(allow_loopback=False) as strict:
        result = strict.deliver(post(receiver.url()))

    assert (result.error_class, result.status_code, result.retryable) == ("unsafe_url", None, False)
    assert receiver.requests == []


def test_given_32_threads_sharing_client_when_delivering_then_every_callback_arrives(
    receiver: Receiver, client: HttpCallbackClient
) -> None:
    requests = [post(receiver.url(f"/n/{i}"), body=str(i).encode()) for i in range(300)]

    with ThreadPoolExecutor(max_workers=32) as pool:
        results: list[CallbackResult] = list(pool.map(client.deliver, requests))

    assert all(r.succeeded for r in results)
    assert sorted(r.body for r in receiver.requests) == sorted(str(i).encode() for i in range(300))
    assert all(r.path == f"/n/{r.body.decode()}" for r in receiver.requests)


class trickling_server:
    """Accepts one connection and sends a response body one byte at a time."""

    def __init__(self, byte_interval_s: float, body_bytes: int) -> None:
        self._interval_s = byte_interval_s
        self._body_bytes = body_bytes
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> int:
        self._thread.start()
        return int(self._listener.getsockname()[1])

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._listener.close()

    def _serve(self) -> None:
        connection, _ = self._listener.accept()
        with connection:
            connection.recv(65536)
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % self._body_bytes)
            for _ in range(self._body_bytes):
                if self._stop.wait(self._interval_s):
                    return
                try:
                    connection.sendall(b"x")
                except OSError:
                    return


def test_given_host_name_when_delivered_then_pinned_ip_used_and_host_header_kept(receiver: Receiver) -> None:
    looked_up: list[str] = []

    def resolver(host: str, port: int) -> list[str]:
        looked_up.append(host)
        return ["127.0.0.1"]

    with HttpCallbackClient(allow_loopback=True, resolver=resolver) as named:
        result = named.deliver(post(f"http://hooks.test:{receiver.port}/hook"))

    assert result.succeeded
    assert looked_up == ["hooks.test"]
    assert receiver.requests[0].headers["host"] == f"hooks.test:{receiver.port}"


def test_given_https_host_name_when_delivered_then_sni_and_certificate_use_the_name(tmp_path: Path) -> None:
    server_tls, client_tls = tls_contexts_for("hooks.test", tmp_path)

    def resolver(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    with (
        Receiver(tls=server_tls) as secure,
        HttpCallbackClient(allow_loopback=True, resolver=resolver, ssl_context=client_tls) as tls_client,
    ):
        by_name = tls_client.deliver(post(f"https://hooks.test:{secure.port}/hook"))
        # The certificate names hooks.test only, so the bare IP must fail verification.
        by_ip = tls_client.deliver(post(secure.url()))

    assert by_name.succeeded
    assert secure.requests[0].headers["host"] == f"hooks.test:{secure.port}"
    assert (by_ip.error_class, by_ip.retryable) == ("connect_error", True)
    assert "certificate" in (by_ip.error_message or "").lower()


def tls_contexts_for(host: str, directory: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """Returns (server, client) TLS contexts around a fresh self-signed certificate for host."""
    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, host)])
    now = datetime.now(UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(hours=1))
        .not_valid_after(now + timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_pem = certificate.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    (directory / "cert.pem").write_bytes(cert_pem)
    (directory / "key.pem").write_bytes(key_pem)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(directory / "cert.pem", directory / "key.pem")
    client = ssl.create_default_context(cadata=cert_pem.decode("ascii"))
    return server, client


@pytest.mark.parametrize(
    ("method", "headers"),
    [("POST", {"X-Bad": "line\r\nInjected: yes"}), ("GET /x", {}), ("POST", {"X-S": "\ud800"})],
)
def test_given_invalid_http_in_job_when_delivered_then_permanent_invalid_request(
    receiver: Receiver, client: HttpCallbackClient, method: str, headers: dict[str, str]
) -> None:
    request = CallbackRequest(url=receiver.url(), method=method, headers=headers, body=b"", timeout_s=5.0)

    result = client.deliver(request)

    assert (result.error_class, result.retryable) == ("invalid_request", False)
    assert receiver.requests == []


def test_given_a_name_resolved_recently_when_delivered_again_then_its_answer_is_reused_until_it_expires(
    receiver: Receiver,
) -> None:
    looked_up: list[str] = []
    now_s = [100.0]

    def resolver(host: str, port: int) -> list[str]:
        looked_up.append(host)
        return ["127.0.0.1"]

    with HttpCallbackClient(
        allow_loopback=True, resolver=resolver, dns_cache_s=5.0, monotonic=lambda: now_s[0]
    ) as named:
        url = f"http://hooks.test:{receiver.port}/hook"
        first = named.deliver(post(url))
        now_s[0] += 4.9
        second = named.deliver(post(url))
        now_s[0] += 0.2  # the kept answer expired
        third = named.deliver(post(url))

    assert first.succeeded and second.succeeded and third.succeeded
    assert looked_up == ["hooks.test", "hooks.test"]


def test_given_a_kept_answer_when_the_client_refuses_loopback_then_it_is_still_checked(
    receiver: Receiver,
) -> None:
    looked_up: list[str] = []

    def resolver(host: str, port: int) -> list[str]:
        looked_up.append(host)
        return ["127.0.0.1"]

    with HttpCallbackClient(allow_loopback=False, resolver=resolver, monotonic=lambda: 0.0) as strict:
        results = [strict.deliver(post(f"http://hooks.test:{receiver.port}/hook")) for _ in range(2)]

    # A kept answer goes through the same check as a fresh one: refused both times, never called.
    assert [r.error_class for r in results] == ["unsafe_url", "unsafe_url"]
    assert receiver.requests == []


def test_given_a_failed_lookup_when_delivered_again_then_the_name_is_looked_up_again(
    receiver: Receiver,
) -> None:
    answers: list[list[str] | None] = [None, ["127.0.0.1"]]

    def resolver(host: str, port: int) -> list[str]:
        answer = answers.pop(0)
        if answer is None:
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        return answer

    with HttpCallbackClient(allow_loopback=True, resolver=resolver, monotonic=lambda: 0.0) as named:
        failed = named.deliver(post(f"http://hooks.test:{receiver.port}/hook"))
        retried = named.deliver(post(f"http://hooks.test:{receiver.port}/hook"))

    assert (failed.error_class, retried.succeeded) == ("dns_error", True)
    assert answers == []


def test_given_dns_fails_when_delivered_then_retryable_dns_error_without_request(receiver: Receiver) -> None:
    def failing(host: str, port: int) -> list[str]:
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    with HttpCallbackClient(allow_loopback=True, resolver=failing) as unlucky:
        result = unlucky.deliver(post(f"http://hooks.test:{receiver.port}/hook"))

    assert (result.error_class, result.status_code, result.retryable) == ("dns_error", None, True)
    assert "hooks.test" in (result.error_message or "")
    assert receiver.requests == []


def test_given_dns_hangs_when_delivered_then_the_attempt_ends_at_its_timeout(receiver: Receiver) -> None:
    release = threading.Event()

    def hanging(host: str, port: int) -> list[str]:
        release.wait(timeout=10)
        return ["127.0.0.1"]

    with HttpCallbackClient(allow_loopback=True, resolver=hanging) as stuck:
        started = time.monotonic()
        result = stuck.deliver(post(f"http://hooks.test:{receiver.port}/hook", timeout_s=0.3))
        waited_s = time.monotonic() - started
        release.set()

    assert (result.error_class, result.retryable) == ("timeout", True)
    assert 0.25 <= waited_s < 2.0
    assert receiver.requests == []


# A receiver controls every byte of its answer; none of it may make deliver raise or hold unbounded memory.


@pytest.mark.parametrize(
    ("raw_value", "expected_s"),
    [
        (b"\xb2", None),  # latin-1 "2 superscript": str.isdigit() says yes, float() says no
        (b"\xb9\xb2", None),
        (b"1\xb2", None),
        (b"\xbd", None),
        (b"-5", None),
        (b"1.5", None),
        (b"1e9", None),
        (b"nan", None),
        (b"inf", None),
        (b"0x10", None),
        (b"", None),
        (b"\x80\xff", None),
        (b"9" * 5000, 86_400.0),  # int() refuses past 4300 digits; capped at a day instead
        (b"Fri, 31 Dec 9999 23:59:59 -2359", 86_400.0),
        (b"Tue, 14 Nov 2023 22:14:20 +2400", None),  # no such offset
        (b"Mon, 01 Jan 0000 00:00:00 GMT", 0.0),
        (b"Tue Nov 14 22:14:20 2023", 60.0),  # asctime: GMT without saying so
        (b"Tuesday, 14-Nov-23 22:14:20 GMT", 60.0),  # RFC 850
    ],
)
@pytest.mark.parametrize("status", [200, 503])
def test_given_odd_retry_after_when_delivered_then_outcome_recorded_and_value_parsed_or_ignored(
    client: HttpCallbackClient, status: int, raw_value: bytes, expected_s: float | None
) -> None:
    raw = b"HTTP/1.1 %d X\r\nRetry-After: %s\r\nContent-Length: 2\r\n\r\nok" % (status, raw_value)

    with RawServer(replying(raw)) as server:
        result = client.deliver(post(server.url()))

    assert (result.status_code, result.error_class, result.response_preview) == (status, None, "ok")
    assert result.succeeded is (status == 200)
    assert result.retry_after_s == expected_s


MALFORMED_RESPONSES = [
    b"HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 20 OK\r\n\r\n",
    b"HTTP/1.1 000 OK\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/2 200\r\n\r\n",
    b"garbage\r\n\r\n",
    b"",
    b"HTTP/1.1 200 OK\r\nX-Bad: a\x00b\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nBad Name: x\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nno colon\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\n\r\nx",
    b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999999\r\n\r\nx",
    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\nraw",
    b"HTTP/1.1 100 Continue\r\n\r\n",
    b"\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",  # a stray empty line before the status line
    b"HTTP/1.1 200 OK\rContent-Length: 0\r\n\r\n",  # a bare CR ends no line
    b"HTTP/1.1 200 OK\r\nX-Long: " + b"\x00" * 50_000 + b"\r\n\r\n",
]


@pytest.mark.parametrize("raw", MALFORMED_RESPONSES, ids=lambda raw: repr(raw[:40]))
def test_given_malformed_response_when_delivered_then_retryable_failure_with_a_bounded_message(
    client: HttpCallbackClient, raw: bytes
) -> None:
    with RawServer(replying(raw)) as server:
        result = client.deliver(post(server.url()))

    assert (result.status_code, result.error_class, result.retryable) == (None, "transport_error", True)
    assert 0 < len(result.error_message or "") <= ERROR_MESSAGE_CHARS


def test_given_a_bug_while_reading_the_answer_when_delivered_then_retryable_client_error_logged(
    receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    class BrokenClock(FrozenClock):
        def now_ms(self) -> int:
            raise RuntimeError("clock exploded")

    receiver.script("/hook", [Reply(200)])

    with HttpCallbackClient(allow_loopback=True, clock=BrokenClock(NOW_MS)) as broken:
        result = broken.deliver(post(receiver.url()))

    assert (result.status_code, result.error_class, result.retryable) == (None, "client_error", True)
    assert result.error_message == "unexpected RuntimeError in the callback client"
    (record,) = [r for r in caplog.records if r.name == "hookline.adapters.http.client"]
    assert record.levelname == "ERROR" and record.exc_info is not None


def endless(head: bytes, chunk: bytes) -> Handler:
    """Returns a handler that sends head, then chunk over and over until the client hangs up."""

    def handle(connection: RawConnection) -> None:
        connection.read_request()
        if not connection.send(head):
            return
        for _ in range(ENDLESS_CHUNKS):
            if connection.stop.is_set() or not connection.send(chunk):
                return

    return handle


ENDLESS_CHUNKS = 100_000  # 6.5 GB of 64 KiB chunks: endless, as far as any attempt can tell
BODY_CHUNK = b"x" * 65536


@pytest.mark.parametrize(
    ("head", "chunk"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 104857600\r\n\r\n", BODY_CHUNK),
        (b"HTTP/1.0 200 OK\r\n\r\n", BODY_CHUNK),  # the body ends when the connection does
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", b"10000\r\n" + BODY_CHUNK + b"\r\n"),
        (b"HTTP/1.1 200 OK\r\n", b"X-More: " + b"h" * 1000 + b"\r\n"),  # headers that never end
    ],
    ids=["content-length-100MB", "until-close", "chunked", "endless-headers"],
)
def test_given_endless_response_when_delivered_then_cut_early_after_bounded_bytes(
    client: HttpCallbackClient, head: bytes, chunk: bytes
) -> None:
    with RawServer(endless(head, chunk)) as server:
        started = time.monotonic()
        result = client.deliver(post(server.url(), timeout_s=10.0))
        elapsed_s = time.monotonic() - started
        # The client closed the connection: the server's next send fails instead of going on for 6.5 GB.
        assert server.wait_done(timeout_s=5.0)

    assert elapsed_s < 2.0
    if head.endswith(b"\r\n\r\n"):
        assert (result.status_code, len(result.response_preview or "")) == (200, RESPONSE_BODY_PREVIEW_BYTES)
    else:
        assert (result.error_class, result.retryable) == ("transport_error", True)
    # What got out is what the kernel's socket buffers absorbed (about 2.7 MB here), not the stream.
    (connection,) = server.connections
    assert connection.sent < 32 * 1024 * 1024


def dripping(head: bytes, interval_s: float) -> Handler:
    """Returns a handler that sends head one byte per interval_s, then a body the same way."""

    def handle(connection: RawConnection) -> None:
        connection.read_request()
        for byte in head + b"x" * 100:
            if connection.stop.wait(interval_s) or not connection.send(bytes([byte])):
                return

    return handle


@pytest.mark.parametrize(
    "head",
    [b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", b"HTTP/1.1 200 OK\r\nX-Slow: " + b"s" * 100],
    ids=["in-body", "in-headers"],
)
def test_given_one_byte_per_second_when_deadline_is_before_timeout_then_cut_at_the_deadline(
    client: HttpCallbackClient, head: bytes
) -> None:
    # Every read gets a byte well within any per-read timeout; only a whole-attempt bound ends this.
    with RawServer(dripping(head, interval_s=1.0)) as server:
        started = time.monotonic()
        request = CallbackRequest(server.url(), "POST", {}, b"x", timeout_s=20.0, deadline_s=started + 1.5)
        result = client.deliver(request)
        elapsed_s = time.monotonic() - started

    assert (result.error_class, result.status_code, result.retryable) == ("timeout", None, True)
    assert 1.4 <= elapsed_s < 2.5


def test_given_one_byte_per_second_and_no_deadline_when_delivered_then_cut_at_timeout(
    client: HttpCallbackClient,
) -> None:
    with RawServer(dripping(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", interval_s=1.0)) as server:
        started = time.monotonic()
        result = client.deliver(post(server.url(), timeout_s=1.5))
        elapsed_s = time.monotonic() - started

    assert (result.error_class, result.retryable) == ("timeout", True)
    assert 1.4 <= elapsed_s < 2.5


def test_given_receiver_that_never_reads_when_sending_a_large_body_then_cut_at_the_deadline(
    client: HttpCallbackClient,
) -> None:
    def never_reads(connection: RawConnection) -> None:
        connection.stop.wait(10)

    with RawServer(never_reads) as server:
        started = time.monotonic()
        body = b"b" * (64 * 1024 * 1024)  # far more than loopback socket buffers take
        result = client.deliver(
            CallbackRequest(server.url(), "POST", {}, body, timeout_s=20.0, deadline_s=started + 1.0)
        )
        elapsed_s = time.monotonic() - started

    assert (result.error_class, result.retryable) == ("timeout", True)
    assert 0.9 <= elapsed_s < 2.0


def test_given_listener_whose_queue_is_full_when_connecting_then_cut_at_the_deadline(
    client: HttpCallbackClient,
) -> None:
    # Linux drops SYNs to a listener whose accept queue is full, so the connect hangs until its timeout.
    with socket.create_server(("127.0.0.1", 0), backlog=0) as listener:
        port = listener.getsockname()[1]
        fillers = [socket.socket() for _ in range(3)]
        for filler in fillers:
            filler.setblocking(False)
            filler.connect_ex(("127.0.0.1", port))
        try:
            started = time.monotonic()
            request = CallbackRequest(
                f"http://127.0.0.1:{port}/", "POST", {}, b"x", timeout_s=20.0, deadline_s=started + 0.8
            )
            result = client.deliver(request)
            elapsed_s = time.monotonic() - started
        finally:
            for filler in fillers:
                filler.close()

    assert (result.error_class, result.retryable) == ("timeout", True)
    assert 0.7 <= elapsed_s < 1.8


def test_given_deadline_already_passed_when_delivered_then_timeout_without_a_request(
    receiver: Receiver, client: HttpCallbackClient
) -> None:
    request = CallbackRequest(
        receiver.url(), "POST", {}, b"x", timeout_s=5.0, deadline_s=time.monotonic() - 1
    )

    result = client.deliver(request)

    assert (result.error_class, result.retryable) == ("timeout", True)
    assert receiver.requests == []


def test_given_name_resolving_to_a_private_address_when_delivered_then_record_does_not_name_it() -> None:
    def private(host: str, port: int) -> list[str]:
        return ["10.0.0.5"]

    with HttpCallbackClient(allow_loopback=True, resolver=private) as named:
        result = named.deliver(post("http://db.internal.example/hook"))

    assert (result.error_class, result.retryable) == ("unsafe_url", False)
    assert result.error_message == "callback host 'db.internal.example' is not a public address"
