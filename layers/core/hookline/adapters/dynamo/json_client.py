"""DynamoDB's JSON protocol spoken directly, for the hot path: boto3's answers for a fraction of its CPU.

boto3 spends several times the executor's own work per job on each call (validating the parameters against the
service model, walking the model again to serialise and to parse, an event hook chain, building and signing an
AWSRequest, urllib3; the figures are on docs/performance.md). DynamoDB speaks JSON whose attribute values are
already in the low-level form the adapters build, so this client sends the adapters' request dicts as they are
(json.dumps), signs them with SigV4 (the signing key cached per day), posts them on a kept-alive connection
per thread, and json.loads the reply. It signs with its own SigV4Signer rather than botocore's SigV4Auth,
which costs more (docs/performance.md); the tests hold its signatures equal to SigV4Auth's over odd endpoints
(ports, IPv6, case), session tokens and bodies, so a change to either shows there.

It answers exactly like the boto3 client for the operations it serves (JSON_OPERATIONS; any other goes to
the boto3 client it is built over):

- a reply is the parsed JSON (numbers stay strings, as in boto3's low-level form); binary ("B") values are
  never used by Hookline's items and are left base64-encoded;
- an error is a botocore ClientError with the same response dict: Error.Code and Error.Message, and the
  error's own fields at the top level (Item of ReturnValuesOnConditionCheckFailure, CancellationReasons of
  TransactionCanceledException), so the adapters' refusal handling is unchanged;
- retries are botocore's standard mode itself (botocore.retries.standard): its retry conditions (the
  transient and throttling error codes and statuses, the operation model's retryable errors, DynamoDB's
  CRC32 check), its backoff (jittered exponential, 25 ms base, 1 s for throttling) and its retry quota, a
  token bucket shared by every thread of the client: once a brownout has spent it, a failed call is not
  retried at all (until successes refill it), instead of every executor thread tripling its request rate.
  The connect and read timeouts are the boto3 client's (wiring.py). What is left after the last attempt is
  raised as botocore raises it (EndpointConnectionError, ConnectTimeoutError, ReadTimeoutError, or the
  ClientError). A write whose reply was lost may be sent twice, as with boto3: every hot-path write is
  conditional, so a repeat is refused by its own condition and never applied twice, and a transaction
  carries an idempotency token (ClientRequestToken, as botocore fills it) shared by its retries, so its
  repeat reports the first one's success;
- a call may be given timeout_s, its whole time budget (attempts and backoff): an attempt's connect and
  read wait no longer than what is left, and no retry starts that could not end in time.

Credentials are those of the boto3 client's session (read, and refreshed if need be, on every call); HTTPS
trusts what botocore would (AWS_CA_BUNDLE or the config file's ca_bundle, else certifi's bundle).
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

from botocore.awsrequest import HeadersDict
from botocore.exceptions import (
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    ReadTimeoutError,
)
from botocore.httpsession import get_cert_path
from botocore.parsers import ResponseParserError
from botocore.retries import quota, standard

from hookline.adapters.sockets import idle_socket_unusable

# Method name on the boto3 client -> DynamoDB operation.
JSON_OPERATIONS = {
    "get_item": "GetItem",
    "put_item": "PutItem",
    "update_item": "UpdateItem",
    "transact_write_items": "TransactWriteItems",
}
# Operations whose model has an idempotency token, which botocore fills when the caller does not.
IDEMPOTENT_WITH_TOKEN = frozenset({"TransactWriteItems"})
MAX_ATTEMPTS = 3
_TARGET_PREFIX = "DynamoDB_20120810."
_CONTENT_TYPE = "application/x-amz-json-1.0"
_SERVICE = "dynamodb"
_DEFAULT_PORTS = {"http": 80, "https": 443}


class _Reply:
    """An HTTP reply as botocore's retry conditions read it (status_code, headers, content)."""

    def __init__(self, status_code: int, headers: HeadersDict | None = None, content: bytes = b"") -> None:
        self.status_code = status_code
        self.headers = headers if headers is not None else HeadersDict()
        self.content = content


_SUCCEEDED = _Reply(200)  # what a success tells the retry quota


class _Failed(Exception):
    """An attempt failed: what to raise if it is not retried, and what botocore's retry conditions read."""

    def __init__(
        self,
        final: Exception,
        reply: _Reply | None = None,
        parsed: dict[str, Any] | None = None,
        caught: Exception | None = None,
    ) -> None:
        super().__init__(str(final))
        self.final = final
        self.reply = reply
        self.parsed = parsed
        self.caught = caught


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


class DynamoJsonClient:
    """Serves JSON_OPERATIONS itself and passes every other attribute to the boto3 client it is built over.

    Thread-safe: each thread has its own connection; the signer's key cache and the retry quota have locks.
    """

    def __init__(
        self,
        client: Any,
        credentials: Any,
        connect_timeout_s: float,
        read_timeout_s: float,
        max_attempts: int = MAX_ATTEMPTS,
        ca_bundle: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        """Serves client's endpoint, region and service model (a boto3 DynamoDB client).

        credentials: a botocore Credentials object (refreshed as needed), the one the boto3 client's
        session holds. ca_bundle: the CA file HTTPS trusts (botocore's ca_bundle setting), else certifi's.
        """
        self._client = client
        self._credentials = credentials
        self._endpoint = client.meta.endpoint_url
        parts = urlsplit(self._endpoint)
        self._https = parts.scheme == "https"
        self._hostname = parts.hostname or ""
        self._port = parts.port or (443 if self._https else 80)
        self._host = host_header(self._endpoint)
        self._signer = SigV4Signer(client.meta.region_name)
        self._operations = {
            name: client.meta.service_model.operation_model(name) for name in JSON_OPERATIONS.values()
        }
        self._connect_timeout_s = connect_timeout_s
        self._read_timeout_s = read_timeout_s
        self._sleep = sleep
        rng = rng or random.Random()
        # botocore's standard retry mode, as register_retry_handler assembles it for a boto3 client.
        throttling = standard.ThrottlingErrorDetector(standard.RetryEventAdapter())
        self._retry_policy = standard.RetryPolicy(
            retry_checker=standard.StandardRetryConditions(max_attempts=max_attempts),
            retry_backoff=standard.ExponentialBackoff(
                service_name=_SERVICE, throttling_detector=throttling, random=rng.random
            ),
        )
        self._retry_quota = standard.RetryQuotaChecker(quota.RetryQuota(), throttling)
        self._ssl = (
            ssl.create_default_context(cafile=ca_bundle or get_cert_path(True)) if self._https else None
        )
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
        operation = JSON_OPERATIONS.get(name)
        if operation is None:
            return getattr(self._client, name)

        def send(*, timeout_s: float | None = None, **params: Any) -> dict[str, Any]:
            return self.call(operation, params, timeout_s)

        send.__name__ = name
        self.__dict__[name] = send  # found directly from now on
        return send

    def call(self, operation: str, params: dict[str, Any], timeout_s: float | None = None) -> dict[str, Any]:
        """Sends one operation, retrying as botocore's standard mode does; returns the parsed reply.

        timeout_s: the call's whole budget, attempts and backoff included; once spent, the last failure is
        raised (ReadTimeoutError or ConnectTimeoutError when the budget ran out during an attempt).
        """
        if operation in IDEMPOTENT_WITH_TOKEN and "ClientRequestToken" not in params:
            # As botocore fills the model's idempotency token: the retries of this call carry the same one,
            # so a transaction whose reply was lost is not applied twice, and its repeat reports success
            # rather than a failed condition (which the job store would read as a lost lease).
            params = {**params, "ClientRequestToken": str(uuid.uuid4())}
        body = json.dumps(params, separators=(",", ":")).encode()
        target = _TARGET_PREFIX + operation
        give_up_at = None if timeout_s is None else time.monotonic() + timeout_s
        request_context: dict[str, Any] = {}
        attempt = 0
        while True:
            attempt += 1
            try:
                reply = self._attempt(operation, target, body, give_up_at)
            except _Failed as failed:
                context = standard.RetryContext(
                    attempt_number=attempt,
                    operation_model=self._operations[operation],
                    parsed_response=failed.parsed,
                    http_response=failed.reply,
                    caught_exception=failed.caught,
                    request_context=request_context,
                )
                if not self._retry_policy.should_retry(context):
                    raise failed.final from None
                delay_s = self._retry_policy.compute_retry_delay(context)
                if give_up_at is not None and time.monotonic() + delay_s >= give_up_at:
                    raise failed.final from None
                # The quota last: a retry that will not be made spends none of it.
                if not self._retry_quota.acquire_retry_quota(context):
                    raise failed.final from None
                self._sleep(delay_s)
                continue
            # botocore hooks it to after-call, whose context is the request's context dict (its stub says
            # RetryContext).
            self._retry_quota.release_retry_quota(cast(Any, request_context), _SUCCEEDED)
            return reply

    def _attempt(self, operation: str, target: str, body: bytes, give_up_at: float | None) -> dict[str, Any]:
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
        left_s = None if give_up_at is None else give_up_at - time.monotonic()
        if left_s is not None and left_s <= 0:
            error = ReadTimeoutError(endpoint_url=self._endpoint, error="the call's timeout_s ran out")
            raise _Failed(error, caught=error)
        response, payload = self._exchange(body, headers, left_s)
        return self._decode(operation, response, payload)

    def _exchange(
        self, body: bytes, headers: dict[str, str], left_s: float | None
    ) -> tuple[http.client.HTTPResponse, bytes]:
        """Posts body on this thread's connection, reading the reply within the read timeout and left_s."""
        connection = self._connection(left_s)
        shortened = left_s is not None and left_s < self._read_timeout_s
        if shortened:
            connection.sock.settimeout(left_s)  # this attempt only: reset below while the connection is kept
        try:
            connection.request("POST", "/", body, headers)
            response = connection.getresponse()
            payload = response.read()
        except TimeoutError as error:
            self._drop_connection()
            final: Exception = ReadTimeoutError(endpoint_url=self._endpoint, error=error)
            raise _Failed(final, caught=final) from error
        except (OSError, http.client.HTTPException) as error:
            # Includes a kept-alive connection the server had closed: one attempt spent, as with botocore.
            self._drop_connection()
            final = EndpointConnectionError(endpoint_url=self._endpoint, error=error)
            raise _Failed(final, caught=final) from error
        if response.will_close:
            self._drop_connection()
        elif shortened:
            connection.sock.settimeout(self._read_timeout_s)
        return response, payload

    def _decode(self, operation: str, response: http.client.HTTPResponse, payload: bytes) -> dict[str, Any]:
        """Returns a 200's parsed reply; raises _Failed with botocore's error for anything else."""
        crc = response.getheader("x-amz-crc32")
        if crc is not None and zlib.crc32(payload) & 0xFFFFFFFF != int(crc):
            # botocore's conditions retry it (RetryDDBChecksumError reads the reply's header and content).
            reply = _Reply(response.status, HeadersDict(response.getheaders()), payload)
            raise _Failed(EndpointConnectionError(endpoint_url=self._endpoint, error="CRC32 mismatch"), reply)
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
        error_response = _error_response(parsed, metadata)
        reply = _Reply(response.status, HeadersDict(response.getheaders()), payload)
        raise _Failed(ClientError(cast(Any, error_response), operation), reply, error_response)

    def _connection(self, left_s: float | None) -> http.client.HTTPConnection:
        """Returns this thread's connection, connected (within the connect timeout and left_s) if need be."""
        connection: http.client.HTTPConnection | None = getattr(self._local, "connection", None)
        if connection is not None:
            if not _dropped(connection):
                return connection
            # The server closed the idle connection (a frozen Lambda thawed, an idle timeout): connect
            # anew rather than spend an attempt, and a backoff, finding that out (as urllib3 does).
            self._drop_connection()
        connect_timeout_s = (
            self._connect_timeout_s if left_s is None else min(self._connect_timeout_s, left_s)
        )
        if self._https:
            connection = http.client.HTTPSConnection(
                self._hostname, self._port, timeout=connect_timeout_s, context=self._ssl
            )
        else:
            connection = http.client.HTTPConnection(self._hostname, self._port, timeout=connect_timeout_s)
        try:
            connection.connect()
        except TimeoutError as error:
            connection.close()
            final: Exception = ConnectTimeoutError(endpoint_url=self._endpoint, error=error)
            raise _Failed(final, caught=final) from error
        except OSError as error:
            connection.close()
            final = EndpointConnectionError(endpoint_url=self._endpoint, error=error)
            raise _Failed(final, caught=final) from error
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


def host_header(endpoint: str) -> str:
    """Returns the Host header sent (and signed) for endpoint, as botocore derives it from the URL.

    Lowercase, an IPv6 address in brackets, no user info, and the port only when it is not the scheme's
    default: the header is part of the signature, so it must be the one the request carries.
    """
    parts = urlsplit(endpoint)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if parts.port is not None and parts.port != _DEFAULT_PORTS.get(parts.scheme):
        host = f"{host}:{parts.port}"
    return host


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
