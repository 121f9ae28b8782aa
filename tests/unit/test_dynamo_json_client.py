"""The DynamoDB JSON client: botocore's signature, replies and errors, its standard-mode retries and quota.

Its answers against moto for every job-store operation are in tests/contract (the "json-client" backend);
these cases are the ones moto cannot produce, played by a scripted loopback server.
"""

from __future__ import annotations

import datetime
import gc
import ipaddress
import json
import ssl
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import boto3
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError

from hookline.adapters.dynamo.json_client import DynamoJsonClient, SigV4Signer, host_header
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import aws_session, dynamodb_client, dynamodb_json_client
from tests.support.raw_http import RawConnection, RawServer, replying
from tests.support.receiver import Receiver, Reply

NOW = datetime.datetime(2026, 12, 3, 12, 0, 5, tzinfo=datetime.UTC)
BODY = b'{"TableName":"jobs","Key":{"pk":{"S":"t"}}}'


ENDPOINTS = [
    "https://dynamodb.eu-west-1.amazonaws.com",
    "https://dynamodb.eu-west-1.amazonaws.com:443/",  # the default port, explicit
    "https://dynamodb.eu-west-1.amazonaws.com:8443/",
    "http://localhost:8000",
    "http://[::1]:8000/",  # IPv6
    "https://[fd00:ec2::254]/",
    "https://DynamoDB.EU-West-1.AmazonAWS.com/",  # case
]
LONG_TOKEN = "IQoJb3JpZ2luX2VjE+/a=" * 60  # an STS session token is often over 1 KB, with + / =
TOKENS = [None, "session-token", LONG_TOKEN]
UNICODE = {"TableName": "jobs", "Item": {"s": {"S": "é✓ 日本 \U0001f600 \u2028"}}}
BODIES = [
    BODY,
    json.dumps(UNICODE, separators=(",", ":")).encode(),  # what the client sends: escaped, ASCII
    json.dumps(UNICODE, ensure_ascii=False).encode(),  # raw UTF-8
    b"",
]


def botocore_authorization(url: str, target: str, body: bytes, token: str | None) -> dict[str, str]:
    """Signs the request with botocore's SigV4Auth at NOW; returns its headers."""
    request = AWSRequest(
        method="POST",
        url=url,
        data=body,
        headers={"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": target},
    )
    with mock.patch("botocore.auth.get_current_datetime", return_value=NOW.replace(tzinfo=None)):
        SigV4Auth(Credentials("AKID", "SECRET", token), "dynamodb", "eu-west-1").add_auth(request)
    return dict(request.headers.items())


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("token", TOKENS, ids=["no-token", "token", "long-token"])
@pytest.mark.parametrize("body", BODIES, ids=["ascii", "escaped-unicode", "utf-8", "empty"])
def test_given_the_same_request_when_signed_then_the_signature_is_botocores(
    endpoint: str, token: str | None, body: bytes
) -> None:
    target = "DynamoDB_20120810.UpdateItem"
    expected = botocore_authorization(endpoint, target, body, token)

    headers = SigV4Signer("eu-west-1").headers(
        host_header(endpoint), target, body, "AKID", "SECRET", token, NOW
    )

    assert headers["authorization"] == expected["Authorization"]
    assert headers.get("x-amz-security-token") == token


def Boto3Stand_in(endpoint_url: str) -> Any:
    """A real boto3 DynamoDB client for endpoint_url whose query (not served by the JSON client) is a stub."""
    client = boto3.client(
        "dynamodb",
        endpoint_url=endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="AKID",
        aws_secret_access_key="SECRET",
    )
    client.query = lambda **params: {"served_by": "boto3", "params": params}
    return client


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as server:
        yield server


@pytest.fixture
def clients() -> Iterator[list[DynamoJsonClient]]:
    made: list[DynamoJsonClient] = []
    yield made
    for client in made:
        client.close()


@pytest.fixture
def lean(clients: list[DynamoJsonClient]) -> Any:
    def make(receiver: Receiver | RawServer, sleeps: list[float]) -> DynamoJsonClient:
        client = DynamoJsonClient(
            Boto3Stand_in(receiver.url("")),
            Credentials("AKID", "SECRET"),
            connect_timeout_s=2,
            read_timeout_s=5,
            sleep=sleeps.append,
        )
        clients.append(client)
        return client

    return make


def reply(status: int, document: dict[str, Any], crc: int | None = None) -> Reply:
    body = json.dumps(document).encode()
    return Reply(status, {"x-amz-crc32": str(zlib.crc32(body) if crc is None else crc)}, body)


def test_given_an_item_when_got_then_the_reply_is_the_json_and_the_request_is_signed(
    receiver: Receiver, lean: Any
) -> None:
    item = {"pk": {"S": "t"}, "n": {"N": "7"}}
    receiver.script("/", [reply(200, {"Item": item})])

    got = lean(receiver, []).get_item(TableName="jobs", Key={"pk": {"S": "t"}})

    assert got["Item"] == item
    assert got["ResponseMetadata"]["HTTPStatusCode"] == 200
    [request] = receiver.requests
    assert request.headers["x-amz-target"] == "DynamoDB_20120810.GetItem"
    assert request.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKID/")
    assert json.loads(request.body) == {"TableName": "jobs", "Key": {"pk": {"S": "t"}}}


def test_given_a_failed_condition_when_updated_then_client_error_carries_the_item_and_no_retry(
    receiver: Receiver, lean: Any
) -> None:
    item = {"status": {"S": "running"}}
    failed = {
        "__type": "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException",
        "message": "The conditional request failed",
        "Item": item,
    }
    receiver.script("/", [reply(400, failed)])
    sleeps: list[float] = []

    with pytest.raises(ClientError) as raised:
        lean(receiver, sleeps).update_item(TableName="jobs")

    assert raised.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert raised.value.response["Item"] == item  # type: ignore[typeddict-item]
    assert len(receiver.requests) == 1
    assert sleeps == []


def test_given_a_cancelled_transaction_when_written_then_the_reasons_are_at_the_top_level(
    receiver: Receiver, lean: Any
) -> None:
    reasons = [
        {"Code": "None"},
        {"Code": "ConditionalCheckFailed", "Message": "The conditional request failed"},
    ]
    cancelled = {
        "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
        "Message": "Transaction cancelled",
        "CancellationReasons": reasons,
    }
    receiver.script("/", [reply(400, cancelled)])

    with pytest.raises(ClientError) as raised:
        lean(receiver, []).transact_write_items(TransactItems=[])

    assert raised.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert raised.value.response["CancellationReasons"] == reasons  # type: ignore[typeddict-item]


def test_given_throttling_then_success_when_put_then_it_retries_with_backoff(
    receiver: Receiver, lean: Any
) -> None:
    throttled = {"__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException"}
    receiver.script("/", [reply(400, throttled), reply(400, throttled), reply(200, {})])
    sleeps: list[float] = []

    lean(receiver, sleeps).put_item(TableName="jobs", Item={})

    assert len(receiver.requests) == 3
    assert len(sleeps) == 2


def test_given_5xx_pages_every_time_when_called_then_it_gives_up_after_three_attempts(
    receiver: Receiver, lean: Any
) -> None:
    page = Reply(500, {"Content-Type": "text/html"}, b"<html>busy</html>")
    receiver.script("/", [page, page, page])

    with pytest.raises(ClientError) as raised:
        lean(receiver, []).get_item(TableName="jobs")

    assert raised.value.response["Error"]["Code"] == "500"
    assert len(receiver.requests) == 3


def test_given_a_corrupted_reply_when_got_then_it_is_asked_again(receiver: Receiver, lean: Any) -> None:
    receiver.script("/", [reply(200, {"Item": {}}, crc=1), reply(200, {"Item": {"ok": {"S": "y"}}})])

    got = lean(receiver, []).get_item(TableName="jobs")

    assert got["Item"] == {"ok": {"S": "y"}}
    assert len(receiver.requests) == 2


def test_given_nothing_listening_when_called_then_botocores_connection_error_is_raised() -> None:
    with Receiver() as gone:
        endpoint = gone.url("")
    client = DynamoJsonClient(
        Boto3Stand_in(endpoint),
        Credentials("AKID", "SECRET"),
        connect_timeout_s=1,
        read_timeout_s=1,
        sleep=lambda s: None,
    )

    with pytest.raises(EndpointConnectionError):
        client.get_item(TableName="jobs")
    client.close()


def test_given_an_operation_it_does_not_serve_when_called_then_boto3_serves_it(
    receiver: Receiver, lean: Any
) -> None:
    got = lean(receiver, []).query(TableName="jobs")

    assert got["served_by"] == "boto3"
    assert receiver.requests == []


def test_given_the_server_closed_the_idle_connection_when_called_then_it_connects_anew_without_a_retry(
    lean: Any,
) -> None:
    body = b'{"Item":{}}'
    answer = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/x-amz-json-1.0\r\n"
        + f"x-amz-crc32: {zlib.crc32(body)}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    sleeps: list[float] = []
    # Answers each connection's first request, then closes it (no "Connection: close": an idle timeout).
    with RawServer(replying(answer)) as server:
        client = lean(server, sleeps)
        client.get_item(TableName="jobs")
        assert server.wait_done(timeout_s=5)  # the server has closed the kept-alive connection

        got = client.get_item(TableName="jobs")
        client.close()

    assert got["Item"] == {}
    assert sleeps == []  # no attempt (and no backoff) was spent on the closed connection
    assert len(server.connections) == 2


def test_given_a_transaction_retried_when_written_then_every_attempt_carries_the_same_token(
    receiver: Receiver, lean: Any
) -> None:
    throttled = {"__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException"}
    receiver.script("/", [reply(400, throttled), reply(200, {}), reply(200, {})])
    client = lean(receiver, [])

    client.transact_write_items(TransactItems=[])
    client.transact_write_items(TransactItems=[])

    tokens = [json.loads(r.body)["ClientRequestToken"] for r in receiver.requests]
    # A lost reply's retry is recognised by DynamoDB as the same transaction; another call is another one.
    assert tokens[0] == tokens[1] != tokens[2]


def test_given_a_thread_that_ended_when_collected_then_its_connection_is_closed(
    receiver: Receiver, lean: Any
) -> None:
    receiver.script("/", [reply(200, {})])
    client = lean(receiver, [])
    made: list[Any] = []

    def call() -> None:
        client.get_item(TableName="jobs")
        made.append(client._local.connection)

    worker = threading.Thread(target=call)
    worker.start()
    worker.join()
    del worker
    gc.collect()

    (connection,) = made
    assert connection.sock is None  # closed with its thread, not kept open until client.close()


def test_given_an_endpoint_with_its_default_port_when_called_then_the_host_sent_is_the_one_signed(
    lean: Any,
) -> None:
    assert host_header("https://dynamodb.eu-west-1.amazonaws.com:443") == "dynamodb.eu-west-1.amazonaws.com"
    assert host_header("http://[::1]:8000/") == "[::1]:8000"
    with Receiver() as receiver:
        receiver.script("/", [reply(200, {})])
        lean(receiver, []).get_item(TableName="jobs")

    (request,) = receiver.requests
    assert request.headers["host"] == f"127.0.0.1:{receiver.port}"


def test_given_throttled_with_a_bare_429_when_put_then_botocores_conditions_retry_it(
    receiver: Receiver, lean: Any
) -> None:
    # A 429 whose code no list names (a proxy's answer): botocore's ThrottlingStatusCodeChecker retries it.
    receiver.script("/", [Reply(429, {"Content-Type": "text/plain"}, b"slow down"), reply(200, {})])
    sleeps: list[float] = []

    lean(receiver, sleeps).put_item(TableName="jobs", Item={})

    assert len(receiver.requests) == 2
    assert len(sleeps) == 1


def test_given_a_brownout_when_many_calls_fail_then_the_retry_quota_stops_the_retries(
    receiver: Receiver, lean: Any
) -> None:
    calls = 40
    page = Reply(500, {"Content-Type": "text/html"}, b"<html>busy</html>")
    receiver.script("/", [page] * (3 * calls))
    client = lean(receiver, [])

    for _ in range(calls):
        with pytest.raises(ClientError):
            client.get_item(TableName="jobs")

    # botocore's standard quota: 500 tokens, 14 a retry (5 when throttled), none back while calls fail.
    # Without it every call would be tried three times (120 requests).
    assert len(receiver.requests) == calls + 500 // 14


def test_given_a_server_that_never_answers_when_called_with_a_timeout_then_it_gives_up_within_it(
    lean: Any,
) -> None:
    def hang(connection: RawConnection) -> None:
        connection.read_request()
        connection.stop.wait(30)

    sleeps: list[float] = []
    with RawServer(hang) as server:
        client = lean(server, sleeps)
        started = time.monotonic()
        with pytest.raises(ReadTimeoutError):
            client.update_item(TableName="jobs", timeout_s=0.3)
        took_s = time.monotonic() - started
        client.close()

    # Without the bound: three attempts of the 5 s read timeout, with backoff between them.
    assert took_s < 5
    assert (len(server.connections), sleeps) == (1, [])  # no retry started past the budget


def test_given_a_timeout_when_called_then_it_is_not_sent_to_dynamodb(receiver: Receiver, lean: Any) -> None:
    receiver.script("/", [reply(200, {})])

    lean(receiver, []).update_item(TableName="jobs", timeout_s=2.5)

    (request,) = receiver.requests
    assert json.loads(request.body) == {"TableName": "jobs"}


def test_given_a_ca_bundle_when_called_over_https_then_the_endpoint_is_trusted_by_it_alone(
    tmp_path: Path, clients: list[DynamoJsonClient]
) -> None:
    server_tls, ca_file = self_signed_for_loopback(tmp_path)
    with Receiver(tls=server_tls) as secure:
        secure.script("/", [reply(200, {"Item": {}})])

        def client(ca_bundle: str | None) -> DynamoJsonClient:
            made = DynamoJsonClient(
                Boto3Stand_in(secure.url("")),
                Credentials("AKID", "SECRET"),
                connect_timeout_s=2,
                read_timeout_s=2,
                ca_bundle=ca_bundle,
                sleep=lambda s: None,
            )
            clients.append(made)
            return made

        got = client(str(ca_file)).get_item(TableName="jobs")
        with pytest.raises(EndpointConnectionError) as refused:
            client(None).get_item(TableName="jobs")  # certifi's bundle does not know the test CA

    assert got["Item"] == {}
    assert "CERTIFICATE_VERIFY_FAILED" in str(refused.value.kwargs["error"])


def self_signed_for_loopback(directory: Path) -> tuple[ssl.SSLContext, Path]:
    """Returns a server context for a fresh self-signed certificate of 127.0.0.1, and its PEM file."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, "hookline test CA")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert_file, key_file)
    return server, cert_file


def test_given_the_wired_clients_then_both_sign_with_the_sessions_one_credentials_object() -> None:
    settings = Settings.from_env({"HOOKLINE_AWS_ENDPOINT": "http://127.0.0.1:1"})
    boto = dynamodb_client(settings)
    client = dynamodb_json_client(boto)
    try:
        # One object: when a role's credentials are renewed, both clients sign with the new ones.
        assert client._credentials is boto._request_signer._credentials
        assert client._credentials is aws_session().get_credentials()
    finally:
        client.close()
        boto.close()
