"""API Gateway proxy events (REST, v1) for driving the submit handler in-process, and a WSGI adapter."""

from __future__ import annotations

import base64
import json
import os
import uuid
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

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
    """Calls the handler with one event and decodes its answer."""
    with warnings.catch_warnings():
        # A read publishes no metric, and Powertools warns about that on every invocation.
        warnings.filterwarnings("ignore", message=NO_METRICS_WARNING)
        reply = target(event, LambdaContext())
    headers = {k.lower(): str(v) for k, v in (reply.get("headers") or {}).items()}
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
