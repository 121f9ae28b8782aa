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

from hookline.adapters.http.client import HttpCallbackClient
from hookline.domain.callbacks import CallbackRequest, CallbackResult
from hookline.domain.clock import FrozenClock
from hookline.domain.constants import MAX_SAME_HOST_REDIRECTS, RESPONSE_BODY_PREVIEW_BYTES
from hookline.domain.signing import callback_headers, new_signing_secret
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


def test_given_body_trickling_when_delivered_then_whole_attempt_times_out(client: HttpCallbackClient) -> None:
    # Each byte arrives well within the timeout, so only a whole-attempt deadline stops this.
    with trickling_server(byte_interval_s=0.05, body_bytes=100) as port:
        started = time.monotonic()
        result = client.deliver(post(f"http://127.0.0.1:{port}/hook", timeout_s=0.3))
        elapsed_s = time.monotonic() - started

    assert (result.error_class, result.retryable) == ("timeout", True)
    assert elapsed_s < 1.0


def test_given_closed_port_when_delivered_then_connect_error(client: HttpCallbackClient) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Nothing listens on the port once the probe socket is closed.

    result = client.deliver(post(f"http://127.0.0.1:{port}/hook"))

    assert (result.error_class, result.status_code, result.retryable) == ("connect_error", None, True)


def test_given_same_host_redirect_when_delivered_then_followed(
    receiver: Receiver, client: HttpCallbackClient
) -> None:
    receiver.script("/hook", [Reply(307, headers={"Location": "/moved"})])
    receiver.script("/moved", [Reply(302, headers={"Location": receiver.url("/final")})])
    receiver.script("/final", [Reply(201, body=b"done")])

    result = client.deliver(post(receiver.url(), body=b"payload"))

    assert (result.status_code, result.response_preview) == (201, "done")
    seen = [(r.method, r.path, r.body) for r in receiver.requests]
    # 307 keeps the method and body; 302 turns POST into GET, as browsers and httpx do.
    assert seen == [("POST", "/hook", b"payload"), ("POST", "/moved", b"payload"), ("GET", "/final", b"")]


def test_given_cross_host_redirect_when_delivered_then_refused(
    receiver: Receiver, client: HttpCallbackClient
) -> None:
    # localhost and 127.0.0.1 are the same machine but different hosts to the redirect rule.
    receiver.script("/hook", [Reply(302, headers={"Location": f"http://localhost:{receiver.port}/x"})])

    result = client.deliver(post(receiver.url()))

    assert (result.error_class, result.status_code, result.retryable) == ("redirect_refused", 302, False)
    assert [r.path for r in receiver.requests] == ["/hook"]


def test_given_redirect_loop_when_delivered_then_too_many_redirects(
    receiver: Receiver, client: HttpCallbackClient
) -> None:
    receiver.script("/loop", [Reply(308, headers={"Location": "/loop"})] * (MAX_SAME_HOST_REDIRECTS + 1))

    result = client.deliver(post(receiver.url("/loop")))

    assert (result.error_class, result.retryable) == ("too_many_redirects", False)
    assert len(receiver.requests) == MAX_SAME_HOST_REDIRECTS + 1


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
