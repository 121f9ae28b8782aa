"""API Gateway proxy events (REST, v1) for driving the submit handler in-process, and a WSGI adapter.

Every event is built as a REST API sends it; under `using_payload_format("2.0")` invoke() sends the same
request as an HTTP API does (payload format 2.0, http_api_event) and checks the answer is one an HTTP API
can read, so a test module runs its requests through both APIs by using the `payload_format` fixture.
"""

from __future__ import annotations

import base64
import json
import os
import uuid
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

import pytest

# Powertools needs these to flush metrics; set before functions.submit.app is imported.
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "Hookline")
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "hookline")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")

# Imported after the environment above is set.
from functions.submit.app import NO_METRICS_WARNING, handler
from hookline_local.gateway import HttpRequest, build_event
from hookline_local.template import binary_media_types, load_template

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
STAGE = "v1"
BINARY_MEDIA_TYPES = binary_media_types(load_template())
REST = "1.0"
HTTP_API = "2.0"
PAYLOAD_FORMATS = (REST, HTTP_API)
_format = {"current": REST}


@contextmanager
def using_payload_format(payload_format: str) -> Iterator[None]:
    """Makes invoke() send its events in payload_format (REST's 1.0 or the HTTP API's 2.0) in the block."""
    assert payload_format in PAYLOAD_FORMATS, payload_format
    previous, _format["current"] = _format["current"], payload_format
    try:
        yield
    finally:
        _format["current"] = previous


@pytest.fixture(params=PAYLOAD_FORMATS, ids=["rest", "http-api"])
def payload_format(request: pytest.FixtureRequest) -> Iterator[str]:
    """Runs the test once per payload format: its invoke() calls go as a REST API's and an HTTP API's events
    (a conftest imports it; a module opts in with pytest.mark.usefixtures("payload_format"))."""
    with using_payload_format(request.param):
        yield request.param


def http_api_event(rest: Mapping[str, Any]) -> dict[str, Any]:
    """Returns the HTTP API event (payload format 2.0, $default stage) for the request a REST event holds.

    As an HTTP API builds it: header names lower case, a repeated header joined with commas, Cookie headers
    in `cookies`, the query as sent (`rawQueryString`) and with repeats joined with commas. The body and
    isBase64Encoded are kept as the REST event has them, so both formats carry the same bytes.
    """
    headers: dict[str, list[str]] = {}
    for name, values in (rest.get("multiValueHeaders") or {}).items():
        headers.setdefault(name.lower(), []).extend(values)
    for name, value in (rest.get("headers") or {}).items():
        headers.setdefault(name.lower(), [value])
    cookies = [c.strip() for v in headers.pop("cookie", []) for c in v.split(";") if c.strip()]
    query = {
        name: list(values) for name, values in (rest.get("multiValueQueryStringParameters") or {}).items()
    }
    context = rest.get("requestContext") or {}
    event: dict[str, Any] = {
        "version": HTTP_API,
        "routeKey": "$default",
        "rawPath": rest["path"],
        "rawQueryString": urlencode([(n, v) for n, values in query.items() for v in values]),
        "headers": {name: ",".join(values) for name, values in headers.items()},
        "requestContext": {
            "accountId": context.get("accountId"),
            "apiId": context.get("apiId"),
            "domainName": context.get("domainName"),
            "http": {
                "method": rest["httpMethod"],
                "path": rest["path"],
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": headers.get("user-agent", [""])[-1],
            },
            "requestId": context.get("requestId"),
            "routeKey": "$default",
            "stage": "$default",
            "timeEpoch": context.get("requestTimeEpoch"),
        },
        "isBase64Encoded": bool(rest.get("isBase64Encoded")),
    }
    if cookies:
        event["cookies"] = cookies
    if query:
        event["queryStringParameters"] = {name: ",".join(values) for name, values in query.items()}
    if rest.get("body") is not None:
        event["body"] = rest["body"]
    return event


@dataclass(frozen=True)
class LambdaContext:
    """The attributes of a Lambda context that Powertools reads."""

    function_name: str = "hookline-submit"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:hookline-submit"
    aws_request_id: str = field(default_factory=lambda: uuid.uuid4().hex)


def proxy_event(
    method: str,
    path: str,
    *,
    json_body: Any = None,
    body: str | None = None,
    raw_body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    query: Mapping[str, str] | None = None,
    api_key: str | None = None,
    request_id: str | None = None,
) -> dict[str, Any]:
    """Returns the proxy event API Gateway (REST) sends for one request, built as the local stack's
    gateway builds it (the resource is the path itself: no template route matching here).

    json_body and raw_body are put in as API Gateway, configured as template.yaml's API, puts a body in
    (base64-encoded for every media type the API declares binary); body goes in as given.
    """
    all_headers = dict(headers or {})
    if json_body is not None:
        raw_body = json.dumps(json_body).encode()
        all_headers.setdefault("Content-Type", "application/json")
    if api_key is not None:
        all_headers["Authorization"] = f"Bearer {api_key}"
    target = quote(path, safe="/") + (f"?{urlencode(dict(query))}" if query else "")
    request = HttpRequest(method.upper(), target, list(all_headers.items()), raw_body or b"")
    event = build_event(
        request,
        path,
        {},
        STAGE,
        request_id=request_id or uuid.uuid4().hex,
        binary_media_types=BINARY_MEDIA_TYPES,
    )
    if raw_body is None:
        # The body goes in as given, even text no HTTP request could carry (the gate's own checks see it).
        event["body"], event["isBase64Encoded"] = body, False
    return event


@dataclass(frozen=True)
class ApiResponse:
    """A proxy response, decoded: header names lower-cased."""

    status: int
    headers: dict[str, str]
    body: str

    def json(self) -> Any:
        """Returns the body parsed as JSON."""
        return json.loads(self.body)

    @property
    def error_code(self) -> str:
        """Returns the envelope's error code."""
        return str(self.json()["error"]["code"])


def invoke(event: dict[str, Any], target: Handler = handler) -> ApiResponse:
    """Calls the handler with one event, as an HTTP API would send it under using_payload_format("2.0"),
    and decodes its answer."""
    as_http_api = _format["current"] == HTTP_API and event.get("version") != HTTP_API
    sent = http_api_event(event) if as_http_api else event
    with warnings.catch_warnings():
        # A read publishes no metric, and Powertools warns about that on every invocation.
        warnings.filterwarnings("ignore", message=NO_METRICS_WARNING)
        reply = target(sent, LambdaContext())
    if sent.get("version") == HTTP_API:
        # An HTTP API reads no multiValueHeaders, and an answer without statusCode would become a 200
        # whose body is the whole answer.
        assert "multiValueHeaders" not in reply and "statusCode" in reply, reply
    headers = {k.lower(): str(v) for k, v in (reply.get("headers") or {}).items()}
    if reply.get("cookies"):
        headers["set-cookie"] = ", ".join(reply["cookies"])
    for name, values in (reply.get("multiValueHeaders") or {}).items():
        headers[name.lower()] = ", ".join(str(v) for v in values)
    body = reply.get("body") or ""
    if reply.get("isBase64Encoded"):
        body = base64.b64decode(body).decode()
    return ApiResponse(int(reply["statusCode"]), headers, body)


@dataclass
class ApiClient:
    """Sends requests to the in-process handler as one API key."""

    api_key: str | None = None

    def request(self, method: str, path: str, **kwargs: Any) -> ApiResponse:
        """Sends one request; keyword arguments are those of proxy_event."""
        kwargs.setdefault("api_key", self.api_key)
        return invoke(proxy_event(method, path, **kwargs))

    def get(self, path: str, **kwargs: Any) -> ApiResponse:
        """Sends a GET."""
        return self.request("GET", path, **kwargs)

    def post(self, path: str, json_body: Any = None, **kwargs: Any) -> ApiResponse:
        """Sends a POST with a JSON body."""
        return self.request("POST", path, json_body=json_body, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> ApiResponse:
        """Sends a DELETE."""
        return self.request("DELETE", path, **kwargs)


def wsgi_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """Serves WSGI requests by turning each into a proxy event for the submit handler."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    raw = environ["wsgi.input"].read(length) if length else b""
    headers = {
        key[5:].replace("_", "-").title(): str(value)
        for key, value in environ.items()
        if key.startswith("HTTP_")
    }
    if environ.get("CONTENT_TYPE"):
        headers["Content-Type"] = environ["CONTENT_TYPE"]
    query = dict(parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True))
    # WSGI hands the path over as latin-1 text of the raw bytes; API Gateway decodes it as UTF-8.
    path = (environ.get("PATH_INFO") or "/").encode("latin-1").decode("utf-8", errors="replace")
    # The body's bytes as sent, passed on as API Gateway passes them.
    event = proxy_event(environ["REQUEST_METHOD"], path, headers=headers, query=query or None, raw_body=raw)
    response = invoke(event)
    reason = "OK" if response.status < 400 else "Error"
    start_response(f"{response.status} {reason}", list(response.headers.items()))
    return [response.body.encode()]
