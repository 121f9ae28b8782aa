"""Plays API Gateway (REST API) on loopback: requests become proxy events v1, handler results responses.

The event has the shape API Gateway and `sam local start-api` send to a Lambda proxy integration
(https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-lambda-proxy-integrations.html),
so the function cannot tell the difference. Like API Gateway, a path or method that no route declares
gets 403 {"message": "Missing Authentication Token"}, and a handler that fails or returns something that
is not a proxy result gets 502 {"message": "Internal server error"}, and one that outlives its Timeout 504,
unless the template's GatewayResponses shape that answer (by its type, else DEFAULT_4XX or DEFAULT_5XX).
"""

from __future__ import annotations

import base64
import json
import logging
import re
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import parse_qsl, unquote, urlsplit

from hookline_local.http_body import BodyError, read_body
from hookline_local.template import GatewayResponse

logger = logging.getLogger(__name__)

ACCOUNT_ID = "123456789012"
API_ID = "local"
MISSING_TOKEN = "Missing Authentication Token"
INTERNAL_ERROR = "Internal server error"
TIMED_OUT = "Endpoint request timed out"
# The $context variables a gateway response template may use here.
_TEMPLATE_VARIABLE = re.compile(r"\$context\.error\.(messageString|message|responseType)")
# Hop-by-hop and framing headers: the server frames the body itself.
_FRAMING_HEADERS = {"content-length", "transfer-encoding", "connection"}
_PARAMETER = re.compile(r"\{([A-Za-z0-9_]+)(\+?)\}")


@dataclass(frozen=True)
class HttpRequest:
    """One HTTP request as the gateway received it.

    Attributes:
        method: The HTTP method, upper case.
        target: The request target: path and query string, still percent-encoded.
        headers: Every header line in arrival order, names as sent.
        body: The raw body.
        source_ip: The client's address.
    """

    method: str
    target: str
    headers: Sequence[tuple[str, str]] = ()
    body: bytes = b""
    source_ip: str = "127.0.0.1"

    def header(self, name: str) -> str | None:
        """Returns the last value of a header (case-insensitive), or None."""
        values = [value for key, value in self.headers if key.lower() == name.lower()]
        return values[-1] if values else None


@dataclass(frozen=True)
class HttpResponse:
    """One HTTP response to write: status, header lines (Content-Length is added on writing) and body."""

    status: int
    headers: Sequence[tuple[str, str]] = ()
    body: bytes = b""

    @classmethod
    def json(cls, status: int, document: Any, headers: Sequence[tuple[str, str]] = ()) -> HttpResponse:
        """Returns a JSON response."""
        return cls(status, [("Content-Type", "application/json"), *headers], json.dumps(document).encode())


Invoke = Callable[[dict[str, Any]], Any]
LocalRoute = Callable[[HttpRequest], HttpResponse]


@dataclass(frozen=True)
class ApiRoute:
    """A template route (`Api` event): method, resource path with {parameters}, and its function."""

    method: str
    resource: str
    invoke: Invoke
    pattern: re.Pattern[str] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "pattern", compile_resource(self.resource))

    @property
    def specificity(self) -> tuple[int, int]:
        """Sorts literal paths before parameters and plain parameters before greedy ones, as API Gateway."""
        greedy = "+}" in self.resource
        return (int(greedy), self.resource.count("{"))


def compile_resource(resource: str) -> re.Pattern[str]:
    """Turns "/v1/jobs/{id}" into a regex with one group per parameter ("{proxy+}" spans slashes)."""
    parts, position = [], 0
    for match in _PARAMETER.finditer(resource):
        parts.append(re.escape(resource[position : match.start()]))
        name, greedy = match.groups()
        parts.append(f"(?P<{name}>.+)" if greedy else f"(?P<{name}>[^/]+)")
        position = match.end()
    parts.append(re.escape(resource[position:]))
    return re.compile("^" + "".join(parts) + "$")


def build_event(
    request: HttpRequest,
    resource: str,
    path_parameters: Mapping[str, str],
    stage: str,
    now_ms: int | None = None,
    request_id: str | None = None,
    binary_media_types: Sequence[str] = (),
) -> dict[str, Any]:
    """Returns the API Gateway REST proxy event (v1) for a request matched to resource.

    The body is passed as API Gateway passes it: base64-encoded (isBase64Encoded) when the request's
    Content-Type matches one of the API's binary_media_types, else as text decoded from UTF-8 with every
    invalid byte replaced by U+FFFD (the function cannot tell such text from what was sent).
    """
    split = urlsplit(request.target)
    path = unquote(split.path)
    query = parse_qsl(split.query, keep_blank_values=True)
    now_ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    request_id = request_id or str(uuid.uuid4())
    multi_headers: dict[str, list[str]] = {}
    for name, value in request.headers:
        multi_headers.setdefault(name, []).append(value)
    multi_query: dict[str, list[str]] = {}
    for name, value in query:
        multi_query.setdefault(name, []).append(value)
    body, is_base64 = _event_body(request.body, request.header("Content-Type"), binary_media_types)
    return {
        "resource": resource,
        "path": path,
        "httpMethod": request.method,
        # API Gateway keeps the last value of a repeated header or parameter here, all of them below.
        "headers": {name: values[-1] for name, values in multi_headers.items()} or None,
        "multiValueHeaders": multi_headers or None,
        "queryStringParameters": {name: values[-1] for name, values in multi_query.items()} or None,
        "multiValueQueryStringParameters": multi_query or None,
        "pathParameters": dict(path_parameters) or None,
        "stageVariables": None,
        "requestContext": {
            "accountId": ACCOUNT_ID,
            "apiId": API_ID,
            "domainName": request.header("Host") or "127.0.0.1",
            "extendedRequestId": request_id,
            "httpMethod": request.method,
            "identity": {
                "sourceIp": request.source_ip,
                "userAgent": request.header("User-Agent"),
                "accessKey": None,
                "accountId": None,
                "caller": None,
                "cognitoAuthenticationProvider": None,
                "cognitoAuthenticationType": None,
                "cognitoIdentityId": None,
                "cognitoIdentityPoolId": None,
                "principalOrgId": None,
                "user": None,
                "userArn": None,
            },
            "path": f"/{stage}{path}",
            "protocol": "HTTP/1.1",
            "requestId": request_id,
            "requestTime": datetime.fromtimestamp(now_ms / 1000, UTC).strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "requestTimeEpoch": now_ms,
            "resourceId": uuid.uuid5(uuid.NAMESPACE_URL, resource).hex[:6],
            "resourcePath": resource,
            "stage": stage,
        },
        "body": body,
        "isBase64Encoded": is_base64,
    }


def _event_body(
    body: bytes, content_type: str | None, binary_media_types: Sequence[str]
) -> tuple[str | None, bool]:
    """Returns the event's body and isBase64Encoded, as API Gateway makes them (see build_event)."""
    if not body:
        return None, False
    if is_binary_media_type(content_type, binary_media_types):
        return base64.b64encode(body).decode("ascii"), True
    return body.decode("utf-8", errors="replace"), False


def is_binary_media_type(content_type: str | None, binary_media_types: Sequence[str]) -> bool:
    """Tells whether a request's Content-Type matches a binary media type ("*/*", "type/*" or exact).

    A request without a Content-Type matches none: API Gateway passes its body as text.
    """
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    if not media_type:
        return False
    for pattern in (p.strip().lower() for p in binary_media_types):
        if pattern in {"*/*", media_type}:
            return True
        if pattern.endswith("/*") and media_type.split("/", 1)[0] == pattern[:-2]:
            return True
    return False


def gateway_error(
    responses: Mapping[str, GatewayResponse],
    response_type: str,
    status: int,
    message: str,
    headers: Sequence[tuple[str, str]] = (),
) -> HttpResponse:
    """Returns API Gateway's own answer of a type: the template's customised response for the type, else its
    DEFAULT_4XX or DEFAULT_5XX (by the type's status), else the built-in {"message": ...}."""
    fallback = "DEFAULT_4XX" if status < 500 else "DEFAULT_5XX"
    custom = responses.get(response_type) or responses.get(fallback)
    if custom is None or custom.template is None:
        return HttpResponse.json(status, {"message": message}, headers)
    values = {"messageString": json.dumps(message), "message": message, "responseType": response_type}
    body = _TEMPLATE_VARIABLE.sub(lambda found: values[found.group(1)], custom.template)
    return HttpResponse(
        custom.status or status, [("Content-Type", "application/json"), *headers], body.encode("utf-8")
    )


def to_http_response(result: Any, responses: Mapping[str, GatewayResponse] | None = None) -> HttpResponse:
    """Turns a proxy integration result (statusCode, headers, multiValueHeaders, body, isBase64Encoded)
    into a response; anything else becomes API Gateway's 502.
    """
    if not isinstance(result, Mapping) or not isinstance(result.get("statusCode"), int):
        logger.error("malformed Lambda proxy response: %r", result)
        return gateway_error(responses or {}, "DEFAULT_5XX", 502, INTERNAL_ERROR)
    # API Gateway merges both maps; a name present in multiValueHeaders takes its values from there.
    merged: dict[str, list[str]] = {}
    for name, value in (result.get("headers") or {}).items():
        merged[name] = [str(value)]
    for name, values in (result.get("multiValueHeaders") or {}).items():
        merged[name] = [str(value) for value in values]
    headers = [
        (name, value)
        for name, values in merged.items()
        if name.lower() not in _FRAMING_HEADERS
        for value in values
    ]
    if not any(name.lower() == "content-type" for name, _ in headers):
        headers.insert(0, ("Content-Type", "application/json"))
    raw = result.get("body") or ""
    body = base64.b64decode(raw) if result.get("isBase64Encoded") else str(raw).encode()
    return HttpResponse(int(result["statusCode"]), headers, body)


class Gateway:
    """Routes requests to template routes (as proxy events) or to local routes (as plain requests)."""

    def __init__(
        self,
        routes: Sequence[ApiRoute],
        stage: str,
        local_routes: Mapping[str, LocalRoute] | None = None,
        binary_media_types: Sequence[str] = (),
        gateway_responses: Mapping[str, GatewayResponse] | None = None,
    ) -> None:
        """Keeps the routes, most specific first.

        Args:
            routes: The template's routes.
            stage: The stage name put in requestContext.
            local_routes: Path prefixes served in-process for every method (the request bin).
            binary_media_types: The API's binary media types (template.binary_media_types).
            gateway_responses: The API's own answers as the template shapes them (template.gateway_responses).
        """
        self._routes = sorted(routes, key=lambda route: route.specificity)
        self._stage = stage
        self._binary_media_types = list(binary_media_types)
        self._local = dict(local_routes or {})
        self.responses = dict(gateway_responses or {})

    def handle(self, request: HttpRequest) -> HttpResponse:
        """Answers one request."""
        path = unquote(urlsplit(request.target).path)
        for prefix, serve in self._local.items():
            if path == prefix or path.startswith(prefix + "/"):
                return serve(request)
        for route in self._routes:
            match = route.pattern.match(path)
            if match is not None and route.method in {request.method, "ANY"}:
                event = build_event(
                    request,
                    route.resource,
                    match.groupdict(),
                    self._stage,
                    binary_media_types=self._binary_media_types,
                )
                return self._invoke(route, event)
        # API Gateway answers an undeclared path or method this way (no function runs to answer 404/405).
        return gateway_error(
            self.responses,
            "MISSING_AUTHENTICATION_TOKEN",
            403,
            MISSING_TOKEN,
            [("x-amzn-ErrorType", "MissingAuthenticationTokenException")],
        )

    def _invoke(self, route: ApiRoute, event: dict[str, Any]) -> HttpResponse:
        try:
            result = route.invoke(event)
        except TimeoutError:
            return gateway_error(self.responses, "INTEGRATION_TIMEOUT", 504, TIMED_OUT)
        except Exception:
            logger.exception("%s %s: the function raised", route.method, route.resource)
            return gateway_error(self.responses, "DEFAULT_5XX", 502, INTERNAL_ERROR)
        return to_http_response(result, self.responses)


class RequestHandler(Protocol):
    """Answers requests: the gateway, or the forwarder in front of a deployed API."""

    def handle(self, request: HttpRequest) -> HttpResponse:
        """Answers one request."""
        ...


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # The default backlog of 5 refuses connections under a burst of submits.
    request_queue_size = 128
    gateway: RequestHandler
    gateway_responses: dict[str, GatewayResponse]

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Ignores clients that hung up; reports anything else."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    """Reads one request, lets the gateway answer it, writes the answer (keep-alive HTTP/1.1)."""

    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle's algorithm the body would wait for the client's
    # delayed ACK (40 ms on Linux) on every keep-alive response.
    disable_nagle_algorithm = True
    server: _Server

    def _serve(self) -> None:
        try:
            body = read_body(self.rfile, self.headers)
        except BodyError as error:
            # The rest of the body is unread and would be taken for the next request: close instead.
            self.close_connection = True
            kind = "REQUEST_TOO_LARGE" if error.status == 413 else "DEFAULT_4XX"
            response = gateway_error(
                self.server.gateway_responses, kind, error.status, str(error), [("Connection", "close")]
            )
        else:
            request = HttpRequest(
                method=self.command,
                target=self.path,
                headers=list(self.headers.items()),
                body=body,
                source_ip=self.client_address[0],
            )
            response = self.server.gateway.handle(request)
        self.send_response(response.status)
        for name, value in response.headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _serve

    def log_message(self, format: str, *args: Any) -> None:
        """Logs requests at debug level (the console is for start-up output and errors)."""
        logger.debug("%s %s", self.address_string(), format % args)


class GatewayServer:
    """Serves a Gateway (or another RequestHandler) over HTTP on a loopback address in a background thread."""

    def __init__(
        self,
        gateway: RequestHandler,
        host: str = "127.0.0.1",
        port: int = 3000,
        gateway_responses: Mapping[str, GatewayResponse] | None = None,
    ) -> None:
        """Binds the socket (raises OSError when the port is taken); serving starts with start().

        gateway_responses shape the answer to a body this server refuses to read (as the template's).
        """
        self._server = _Server((host, port), _Handler)
        self._server.gateway = gateway
        self._server.gateway_responses = dict(gateway_responses or {})
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="gateway", daemon=True
        )

    @property
    def url(self) -> str:
        """Returns the base URL, e.g. http://127.0.0.1:3000."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        """Starts serving."""
        self._thread.start()

    def stop(self) -> None:
        """Stops serving and closes the listening socket."""
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()
