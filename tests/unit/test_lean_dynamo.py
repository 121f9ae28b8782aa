"""The lean DynamoDB client: botocore's signature, replies and errors, and its standard-mode retries.

Its answers against moto for every job-store operation are in tests/contract (the "lean" backend); these
cases are the ones moto cannot produce, played by a scripted loopback server.
"""

from __future__ import annotations

import datetime
import gc
import json
import threading
import zlib
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any
from unittest import mock

import boto3
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError, EndpointConnectionError

from hookline.adapters.dynamo.lean import LeanDynamoClient, SigV4Signer
from tests.support.raw_http import RawServer, replying
from tests.support.receiver import Receiver, Reply

NOW = datetime.datetime(2026, 12, 3, 12, 0, 5, tzinfo=datetime.UTC)
BODY = b'{"TableName":"jobs","Key":{"pk":{"S":"t"}}}'


@pytest.mark.parametrize("token", [None, "session-token"])
def test_given_the_same_request_when_signed_then_the_signature_is_botocores(token: str | None) -> None:
    request = AWSRequest(
        method="POST",
        url="https://dynamodb.eu-west-1.amazonaws.com/",
        data=BODY,
        headers={"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "DynamoDB_20120810.GetItem"},
    )
    with mock.patch("botocore.auth.get_current_datetime", return_value=NOW.replace(tzinfo=None)):
        SigV4Auth(Credentials("AKID", "SECRET", token), "dynamodb", "eu-west-1").add_auth(request)

    headers = SigV4Signer("eu-west-1").headers(
        "dynamodb.eu-west-1.amazonaws.com", "DynamoDB_20120810.GetItem", BODY, "AKID", "SECRET", token, NOW
    )

    assert headers["authorization"] == request.headers["Authorization"]
    assert headers.get("x-amz-security-token") == token


def Boto3Stand_in(endpoint_url: str) -> Any:
    """A real boto3 DynamoDB client for endpoint_url whose query (not served by the lean client) is a stub."""
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
def clients() -> Iterator[list[LeanDynamoClient]]:
    made: list[LeanDynamoClient] = []
    yield made
    for client in made:
        client.close()


@pytest.fixture
def lean(clients: list[LeanDynamoClient]) -> Any:
    def make(receiver: Receiver | RawServer, sleeps: list[float]) -> LeanDynamoClient:
        client = LeanDynamoClient(
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
    client = LeanDynamoClient(
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


def test_given_a_stand_in_for_boto3_when_called_then_the_stand_in_gets_every_call(receiver: Receiver) -> None:
    class Injector:
        meta = SimpleNamespace(endpoint_url=receiver.url(""), region_name="us-east-1")

        def get_item(self, **params: Any) -> dict[str, Any]:
            return {"served_by": "stand-in"}

    client = LeanDynamoClient(
        Injector(), Credentials("AKID", "SECRET"), connect_timeout_s=1, read_timeout_s=1
    )

    assert client.get_item(TableName="jobs") == {"served_by": "stand-in"}
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
