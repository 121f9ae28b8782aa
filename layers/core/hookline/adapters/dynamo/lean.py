"""A lean DynamoDB client for the executor's hot path: the same calls as boto3's, a fraction of its CPU.

Measured with bench/dynamo_calls.py against moto's server, boto3 spends about 1.5 ms of CPU on each call
(validating the parameters against the service model, walking the model again to serialise and to parse,
an event hook chain, building and signing an AWSRequest, urllib3), several times the executor's own work
per job. DynamoDB speaks JSON whose attribute values are already in the low-level form the adapters build,
so this client sends the adapters' request dicts as they are (json.dumps), signs them with SigV4 (the
signing key cached per day), posts them on a kept-alive connection per thread, and json.loads the reply.

It answers exactly like the boto3 client for the operations it serves (LEAN_OPERATIONS; anything else goes
to the boto3 client it wraps, and so does everything when what it wraps is not a boto3 client):

- a reply is the parsed JSON (numbers stay strings, as in boto3's low-level form); binary ("B") values are
  never used by Hookline's items and are left base64-encoded;
- an error is a botocore ClientError with the same response dict: Error.Code and Error.Message, and the
  error's own fields at the top level (Item of ReturnValuesOnConditionCheckFailure, CancellationReasons of
  TransactionCanceledException), so the adapters' refusal handling is unchanged;
- retries are botocore's standard mode: up to MAX_ATTEMPTS attempts on a connection error, a timeout, a
  5xx, a throttling or transient error code or a reply whose CRC32 does not match, with jittered
  exponential backoff; the connect and read timeouts are the boto3 client's (wiring.py). What is left
  after the last attempt is raised as botocore raises it (EndpointConnectionError, ConnectTimeoutError,
  ReadTimeoutError, or the ClientError). A write whose reply was lost may be sent twice, as with boto3:
  every hot-path write is conditional, so a repeat is refused by its own condition and never applied twice,
  and a transaction carries an idempotency token (ClientRequestToken, as botocore fills it) shared by its
  retries, so its repeat reports the first one's success.

Credentials come from botocore's provider chain and are read (and refreshed if need be) on every call.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import http.client
import json
import random
import ssl
import threading
import time
import uuid
import weakref
import zlib
from collections.abc import Callable
from typing import Any, cast
from urllib.parse import urlsplit

from botocore.client import BaseClient
from botocore.exceptions import (
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    ReadTimeoutError,
)
from botocore.parsers import ResponseParserError

from hookline.adapters.sockets import idle_socket_unusable

# Method name on the boto3 client -> DynamoDB operation.
LEAN_OPERATIONS = {
    "get_item": "GetItem",
    "put_item": "PutItem",
    "update_item": "UpdateItem",
    "transact_write_items": "TransactWriteItems",
}
# Operations whose model has an idempotency token, which botocore fills when the caller does not.
IDEMPOTENT_WITH_TOKEN = frozenset({"TransactWriteItems"})
MAX_ATTEMPTS = 3
MAX_BACKOFF_S = 20.0
# botocore's standard retry mode: these codes and statuses are worth another attempt.
RETRYABLE_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottledException",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "TransactionInProgressException",
        "RequestLimitExceeded",
        "BandwidthLimitExceeded",
        "LimitExceededException",
        "RequestThrottled",
        "SlowDown",
        "PriorRequestNotComplete",
        "EC2ThrottledException",
        "RequestTimeout",
        "RequestTimeoutException",
    }
)
RETRYABLE_STATUSES = frozenset({500, 502, 503, 504})
_TARGET_PREFIX = "DynamoDB_20120810."
_CONTENT_TYPE = "application/x-amz-json-1.0"
_SERVICE = "dynamodb"


class _Retry(Exception):
    """An attempt failed in a way another attempt may fix; carries what to raise if none is left."""

    def __init__(self, final: Exception) -> None:
        super().__init__(str(final))
        self.final = final


class SigV4Signer:
    """Signs DynamoDB's POST / requests (AWS Signature Version 4), caching the signing key per day."""

    def __init__(self, region: str) -> None:
        self._region = region
        self._keys: dict[tuple[str, str], bytes] = {}
        self._lock = threading.Lock()

    def headers(
        self,
        host: str,
        target: str,
        body: bytes,
        access_key: str,
        secret_key: str,
        token: str | None,
        now: datetime.datetime,
    ) -> dict[str, str]:
        """Returns the request's headers, Authorization included, for the moment `now` (UTC)."""
        stamp = now.strftime("%Y%m%dT%H%M%SZ")
        day = stamp[:8]
        headers = {"content-type": _CONTENT_TYPE, "host": host, "x-amz-date": stamp, "x-amz-target": target}
        if token:
            headers["x-amz-security-token"] = token
        names = sorted(headers)
        signed = ";".join(names)
        canonical = "\n".join(
            [
                "POST",
                "/",
                "",
                "".join(f"{name}:{headers[name]}\n" for name in names),
                signed,
                hashlib.sha256(body).hexdigest(),
            ]
        )
        scope = f"{day}/{self._region}/{_SERVICE}/aws4_request"
        to_sign = f"AWS4-HMAC-SHA256\n{stamp}\n{scope}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
        signature = hmac.new(self._key(secret_key, day), to_sign.encode(), hashlib.sha256).hexdigest()
        headers["authorization"] = (
            f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, SignedHeaders={signed}, Signature={signature}"
        )
        return headers

    def _key(self, secret_key: str, day: str) -> bytes:
        with self._lock:
            key = self._keys.get((secret_key, day))
            if key is None:
                key = f"AWS4{secret_key}".encode()
                for part in (day, self._region, _SERVICE, "aws4_request"):
                    key = hmac.new(key, part.encode(), hashlib.sha256).digest()
                self._keys = {(secret_key, day): key}  # one day's key at a time
            return key


class LeanDynamoClient:
    """Serves LEAN_OPERATIONS itself and passes every other attribute to the boto3 client it wraps.

    Thread-safe: each thread has its own connection; the signer's key cache has a lock.
    """

    def __init__(
        self,
        client: Any,
        credentials: Any,
        connect_timeout_s: float,
        read_timeout_s: float,
        max_attempts: int = MAX_ATTEMPTS,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        """Wraps client, signing with credentials (a botocore Credentials object, refreshed as needed)."""
        self._client = client
        # Only a boto3 client's calls are replaced; a stand-in wrapping one (a test's fault injector) is
        # called as it is, so what it does to a call still happens.
        self._lean = isinstance(client, BaseClient)
        self._credentials = credentials
        self._endpoint = client.meta.endpoint_url
        parts = urlsplit(self._endpoint)
        self._https = parts.scheme == "https"
        self._hostname = parts.hostname or ""
        self._port = parts.port or (443 if self._https else 80)
        self._host = parts.netloc
        self._signer = SigV4Signer(client.meta.region_name)
        self._connect_timeout_s = connect_timeout_s
        self._read_timeout_s = read_timeout_s
        self._max_attempts = max_attempts
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._ssl = ssl.create_default_context() if self._https else None
        self._local = threading.local()
        # Every live thread's connection, for close(); weak, so those of threads that ended do not pile up.
        self._open: weakref.WeakSet[http.client.HTTPConnection] = weakref.WeakSet()
        self._open_lock = threading.Lock()

    def close(self) -> None:
        """Closes every thread's connection (not the boto3 client: its owner closes it); later calls connect
        again."""
        with self._open_lock:
            connections = list(self._open)
            self._open.clear()
        for connection in connections:
            connection.close()

    def __getattr__(self, name: str) -> Any:
        operation = LEAN_OPERATIONS.get(name)
        if operation is None or not self._lean:
            return getattr(self._client, name)
        return lambda **params: self.call(operation, params)

    def call(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        """Sends one operation, retrying as botocore's standard mode does; returns the parsed reply."""
        if operation in IDEMPOTENT_WITH_TOKEN and "ClientRequestToken" not in params:
            # As botocore fills the model's idempotency token: the retries of this call carry the same one,
            # so a transaction whose reply was lost is not applied twice, and its repeat reports success
            # rather than a failed condition (which the job store would read as a lost lease).
            params = {**params, "ClientRequestToken": str(uuid.uuid4())}
        body = json.dumps(params, separators=(",", ":")).encode()
        target = _TARGET_PREFIX + operation
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._attempt(operation, target, body)
            except _Retry as retry:
                if attempt >= self._max_attempts:
                    raise retry.final from None
                self._sleep(min(MAX_BACKOFF_S, self._rng.random() * 2 ** (attempt - 1)))

    def _attempt(self, operation: str, target: str, body: bytes) -> dict[str, Any]:
        credentials = self._credentials.get_frozen_credentials() if self._credentials is not None else None
        if credentials is None or credentials.access_key is None:
            raise NoCredentialsError()
        headers = self._signer.headers(
            self._host,
            target,
            body,
            credentials.access_key,
            credentials.secret_key,
            credentials.token,
            datetime.datetime.now(datetime.UTC),
        )
        connection = self._connection()
        try:
            connection.request("POST", "/", body, headers)
            response = connection.getresponse()
            payload = response.read()
        except TimeoutError as error:
            self._drop_connection()
            raise _Retry(ReadTimeoutError(endpoint_url=self._endpoint, error=error)) from error
        except (OSError, http.client.HTTPException) as error:
            # Includes a kept-alive connection the server had closed: one attempt spent, as with botocore.
            self._drop_connection()
            raise _Retry(EndpointConnectionError(endpoint_url=self._endpoint, error=error)) from error
        if response.will_close:
            self._drop_connection()
        crc = response.getheader("x-amz-crc32")
        if crc is not None and zlib.crc32(payload) & 0xFFFFFFFF != int(crc):
            raise _Retry(EndpointConnectionError(endpoint_url=self._endpoint, error="CRC32 mismatch"))
        try:
            parsed: dict[str, Any] = json.loads(payload) if payload else {}
        except ValueError:
            if response.status == 200:
                raise ResponseParserError(f"{operation}: the reply is not JSON") from None
            # Not DynamoDB's own answer (a proxy's or a load balancer's page): as botocore, the status
            # stands for the code, and a 5xx is tried again.
            parsed = {"__type": str(response.status), "message": response.reason}
        metadata = {
            "RequestId": response.getheader("x-amzn-requestid", ""),
            "HTTPStatusCode": response.status,
            "HTTPHeaders": {name.lower(): value for name, value in response.getheaders()},
        }
        if response.status == 200:
            parsed["ResponseMetadata"] = metadata
            return parsed
        failure = ClientError(cast(Any, _error_response(parsed, metadata)), operation)
        code = failure.response["Error"]["Code"]
        if code in RETRYABLE_CODES or response.status in RETRYABLE_STATUSES:
            raise _Retry(failure)
        raise failure

    def _connection(self) -> http.client.HTTPConnection:
        """Returns this thread's connection, connected (within the connect timeout) if it was not."""
        connection: http.client.HTTPConnection | None = getattr(self._local, "connection", None)
        if connection is not None:
            if not _dropped(connection):
                return connection
            # The server closed the idle connection (a frozen Lambda thawed, an idle timeout): connect
            # anew rather than spend an attempt, and a backoff, finding that out (as urllib3 does).
            self._drop_connection()
        if self._https:
            connection = http.client.HTTPSConnection(
                self._hostname, self._port, timeout=self._connect_timeout_s, context=self._ssl
            )
        else:
            connection = http.client.HTTPConnection(
                self._hostname, self._port, timeout=self._connect_timeout_s
            )
        try:
            connection.connect()
        except TimeoutError as error:
            connection.close()
            raise _Retry(ConnectTimeoutError(endpoint_url=self._endpoint, error=error)) from error
        except OSError as error:
            connection.close()
            raise _Retry(EndpointConnectionError(endpoint_url=self._endpoint, error=error)) from error
        assert connection.sock is not None
        connection.sock.settimeout(self._read_timeout_s)  # every later send and read
        self._local.connection = connection
        with self._open_lock:
            self._open.add(connection)
        # An executor makes new delivery threads every run: close each one's connection as soon as its thread
        # object goes, or a warm Lambda would keep a socket per thread of every earlier invocation.
        weakref.finalize(threading.current_thread(), connection.close)
        return connection

    def _drop_connection(self) -> None:
        connection: http.client.HTTPConnection | None = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            with self._open_lock:
                self._open.discard(connection)
        self._local.connection = None


def _dropped(connection: http.client.HTTPConnection) -> bool:
    """Tells whether an idle kept-alive connection was closed by the server (readable while idle: EOF)."""
    return connection.sock is None or idle_socket_unusable(connection.sock)


def _error_response(parsed: dict[str, Any], metadata: dict[str, Any]) -> dict[str, Any]:
    """Builds the response dict botocore gives a ClientError from DynamoDB's JSON error body."""
    code = str(parsed.get("__type", "")).rsplit("#", 1)[-1]
    message = str(parsed.get("message", parsed.get("Message", "")))
    fields = {name: value for name, value in parsed.items() if name not in ("__type", "message", "Message")}
    if code == "TransactionCanceledException" and message:
        fields.setdefault("Message", message)
    return {"Error": {"Code": code, "Message": message}, "ResponseMetadata": metadata, **fields}
