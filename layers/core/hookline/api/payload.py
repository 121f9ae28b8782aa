"""API Gateway HTTP API events (Lambda payload format 2.0) in the REST shape (1.0) the gate handles, and
the gate's answers back in the shape an HTTP API reads.

Rule: an HTTP API request meets exactly the checks, routes and error envelope a REST API request meets.
So a 2.0 event is rewritten into the 1.0 event a REST API would have sent for the same request (method,
path, headers, query, body bytes, request id) and goes through gate.handle with the same resolver; only
the answer's framing changes. One resolver serves both: Powertools' APIGatewayHttpResolver would need a
second app, and the gate, the scopes and the not-found handler read REST fields.

What the rewrite relies on:
- the path is `rawPath` as the HTTP API passed it; the stage is `$default` (template.yaml), so no stage
  name prefixes it;
- a repeated header arrives joined with commas (2.0 keeps no list), the cookies arrive apart
  (`cookies`) and become one Cookie header again;
- the query is parsed from `rawQueryString` (repeats stay separate), as the local gateway parses a REST
  request's query; `queryStringParameters` (repeats joined with commas, kept whole) only when no raw
  string came;
- the body and `isBase64Encoded` pass unchanged, so the gate decodes and checks the same bytes (an HTTP API
  base64-encodes every body whose media type it does not deem text; a JSON body arrives as text).

An answer in 2.0 has no multiValueHeaders: each header's values are joined with ", " (Set-Cookie values
go to `cookies`, one entry each), since an HTTP API would otherwise drop them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl

HTTP_API_VERSION = "2.0"
_SET_COOKIE = "set-cookie"


def is_http_api_event(event: Mapping[str, Any]) -> bool:
    """Tells whether event is an HTTP API proxy event in payload format 2.0 (REST events carry no version
    or "1.0")."""
    return str(event.get("version") or "") == HTTP_API_VERSION


def rest_event(event: Mapping[str, Any]) -> dict[str, Any]:
    """Returns the REST proxy event (1.0) for the request a 2.0 event describes."""
    context = event.get("requestContext") or {}
    http = context.get("http") or {}
    method = str(http.get("method") or "GET").upper()
    path = str(event.get("rawPath") or http.get("path") or "/")
    headers = {str(name).lower(): str(value) for name, value in (event.get("headers") or {}).items()}
    cookies = [str(cookie) for cookie in event.get("cookies") or []]
    if cookies:
        headers["cookie"] = "; ".join(cookies)
    query = _query(event)
    stage = str(context.get("stage") or "$default")
    return {
        "version": "1.0",
        "resource": path,
        "path": path,
        "httpMethod": method,
        "headers": headers or None,
        "multiValueHeaders": {name: [value] for name, value in headers.items()} or None,
        "queryStringParameters": {name: values[-1] for name, values in query.items()} or None,
        "multiValueQueryStringParameters": query or None,
        "pathParameters": event.get("pathParameters") or None,
        "stageVariables": event.get("stageVariables") or None,
        "requestContext": {
            "accountId": context.get("accountId"),
            "apiId": context.get("apiId"),
            "domainName": context.get("domainName"),
            "httpMethod": method,
            "identity": {
                "sourceIp": http.get("sourceIp"),
                "userAgent": http.get("userAgent"),
            },
            "path": path,
            "protocol": http.get("protocol"),
            "requestId": context.get("requestId"),
            "requestTimeEpoch": context.get("timeEpoch"),
            "resourcePath": path,
            "stage": stage,
        },
        "body": event.get("body"),
        "isBase64Encoded": bool(event.get("isBase64Encoded")),
    }


def http_api_response(response: Mapping[str, Any]) -> dict[str, Any]:
    """Returns a REST proxy answer (headers and/or multiValueHeaders) as an HTTP API answer (2.0)."""
    values: dict[str, list[str]] = {}
    names: dict[str, str] = {}
    for name, value in (response.get("headers") or {}).items():
        names.setdefault(str(name).lower(), str(name))
        values.setdefault(str(name).lower(), []).append(str(value))
    for name, listed in (response.get("multiValueHeaders") or {}).items():
        key = str(name).lower()
        names.setdefault(key, str(name))
        # A name in both maps: the multi-value list is the complete one (API Gateway merges them so).
        values[key] = [str(value) for value in listed or []]
    answer: dict[str, Any] = {
        "statusCode": int(response.get("statusCode") or 200),
        "headers": {names[key]: ", ".join(listed) for key, listed in values.items() if key != _SET_COOKIE},
        "body": response.get("body") or "",
        "isBase64Encoded": bool(response.get("isBase64Encoded")),
    }
    if values.get(_SET_COOKIE):
        answer["cookies"] = values[_SET_COOKIE]
    return answer


def _query(event: Mapping[str, Any]) -> dict[str, list[str]]:
    """Returns every query parameter's values in order of arrival."""
    found: dict[str, list[str]] = {}
    raw = str(event.get("rawQueryString") or "")
    if raw:
        for name, value in parse_qsl(raw, keep_blank_values=True):
            found.setdefault(name, []).append(value)
        return found
    for name, value in (event.get("queryStringParameters") or {}).items():
        found[str(name)] = [str(value)]  # a comma may be the value's own: no split
    return found
