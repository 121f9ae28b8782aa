"""The local gateway turns requests into API Gateway REST proxy events (v1) and results into responses."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest
from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent

from hookline_local.gateway import (
    ApiRoute,
    Gateway,
    GatewayServer,
    HttpRequest,
    HttpResponse,
    build_event,
    compile_resource,
    is_binary_media_type,
    to_http_response,
)
from hookline_local.runtime import LocalContext
from hookline_local.template import binary_media_types, gateway_responses, load_template

# The keys of the proxy event API Gateway sends to a Lambda proxy integration (REST API, payload 1.0),
# as in the AWS documentation's example event and `sam local start-api`.
REFERENCE_EVENT_KEYS = {
    "resource",
    "path",
    "httpMethod",
    "headers",
    "multiValueHeaders",
    "queryStringParameters",
    "multiValueQueryStringParameters",
    "pathParameters",
    "stageVariables",
    "requestContext",
    "body",
    "isBase64Encoded",
}
REFERENCE_REQUEST_CONTEXT_KEYS = {
    "accountId",
    "apiId",
    "domainName",
    "extendedRequestId",
    "httpMethod",
    "identity",
    "path",
    "protocol",
    "requestId",
    "requestTime",
    "requestTimeEpoch",
    "resourceId",
    "resourcePath",
    "stage",
}


def _request(**overrides: Any) -> HttpRequest:
    fields: dict[str, Any] = {
        "method": "POST",
        "target": "/v1/jobs/job%2042?tag=a&tag=b&empty=",
        "headers": [
            ("Host", "127.0.0.1:3000"),
            ("Authorization", "Bearer k"),
            ("X-Multi", "1"),
            ("X-Multi", "2"),
            ("User-Agent", "curl/8"),
        ],
        "body": b'{"a": 1}',
        "source_ip": "127.0.0.9",
    }
    return HttpRequest(**{**fields, **overrides})


def test_given_request_when_building_event_then_it_has_the_reference_shape_and_values() -> None:
    event = build_event(_request(), "/v1/jobs/{id}", {"id": "job 42"}, "dev", now_ms=1_700_000_000_000)

    assert set(event) == REFERENCE_EVENT_KEYS
    assert set(event["requestContext"]) == REFERENCE_REQUEST_CONTEXT_KEYS
    assert event["resource"] == "/v1/jobs/{id}"
    assert event["path"] == "/v1/jobs/job 42"
    assert event["httpMethod"] == "POST"
    assert event["headers"]["X-Multi"] == "2"
    assert event["multiValueHeaders"]["X-Multi"] == ["1", "2"]
    assert event["queryStringParameters"] == {"tag": "b", "empty": ""}
    assert event["multiValueQueryStringParameters"] == {"tag": ["a", "b"], "empty": [""]}
    assert event["pathParameters"] == {"id": "job 42"}
    assert event["stageVariables"] is None
    assert event["body"] == '{"a": 1}'
    assert event["isBase64Encoded"] is False
    context = event["requestContext"]
    assert context["requestId"] == context["extendedRequestId"]
    assert context["stage"] == "dev"
    assert context["resourcePath"] == "/v1/jobs/{id}"
    assert context["httpMethod"] == "POST"
    assert context["path"] == "/dev/v1/jobs/job 42"
    assert context["identity"]["sourceIp"] == "127.0.0.9"
    assert context["identity"]["userAgent"] == "curl/8"
    assert context["requestTimeEpoch"] == 1_700_000_000_000
    assert context["requestTime"] == "14/Nov/2023:22:13:20 +0000"


def test_given_no_query_body_or_parameters_when_building_event_then_those_keys_are_null() -> None:
    event = build_event(_request(method="GET", target="/healthz", body=b""), "/healthz", {}, "dev")

    for key in ("queryStringParameters", "multiValueQueryStringParameters", "pathParameters", "body"):
        assert event[key] is None, key
    assert event["isBase64Encoded"] is False


INVALID_UTF8_JSON = b'{"s": "\xc3\x28"}'  # 0xc3 opens a two-byte sequence; 0x28 cannot continue it


def _json_request(body: bytes, content_type: str | None = "application/json") -> HttpRequest:
    headers = [] if content_type is None else [("Content-Type", content_type)]
    return _request(headers=headers, body=body)


@pytest.mark.parametrize("binary", [["*/*"], ["application/*"], ["application/json"]])
def test_given_a_binary_media_type_matching_the_body_when_building_event_then_its_bytes_pass_in_base64(
    binary: list[str],
) -> None:
    event = build_event(_json_request(INVALID_UTF8_JSON), "/x", {}, "dev", binary_media_types=binary)

    assert event["isBase64Encoded"] is True
    assert base64.b64decode(event["body"]) == INVALID_UTF8_JSON


@pytest.mark.parametrize(
    ("binary", "content_type"),
    [([], "application/json"), (["image/png"], "application/json"), (["*/*"], None)],
    ids=["none declared", "another type", "no content type"],
)
def test_given_no_binary_media_type_matching_when_building_event_then_text_with_invalid_bytes_replaced(
    binary: list[str], content_type: str | None
) -> None:
    event = build_event(
        _json_request(INVALID_UTF8_JSON, content_type), "/x", {}, "dev", binary_media_types=binary
    )

    # As API Gateway does: the function gets text, the bad byte already replaced by U+FFFD.
    assert event["isBase64Encoded"] is False
    assert event["body"] == '{"s": "\ufffd("}'


def test_given_the_template_when_its_binary_media_types_are_read_then_every_body_passes_as_bytes() -> None:
    declared = binary_media_types(load_template())

    assert declared == ["*/*"]
    assert is_binary_media_type("application/json; charset=utf-8", declared)


def test_given_event_when_powertools_parses_it_then_it_reads_what_the_client_sent() -> None:
    parsed = APIGatewayProxyEvent(build_event(_request(), "/v1/jobs/{id}", {"id": "job 42"}, "dev"))

    assert parsed.headers.get("authorization") == "Bearer k"
    assert parsed.json_body == {"a": 1}
    assert parsed.path_parameters == {"id": "job 42"}
    assert parsed.request_context.identity.source_ip == "127.0.0.9"


@pytest.mark.parametrize(
    ("resource", "path", "expected"),
    [
        ("/v1/jobs", "/v1/jobs", {}),
        ("/v1/jobs/{id}", "/v1/jobs/abc", {"id": "abc"}),
        ("/v1/jobs/{id}", "/v1/jobs/abc/executions", None),
        ("/v1/jobs/{id}/executions", "/v1/jobs/abc/executions", {"id": "abc"}),
        ("/files/{proxy+}", "/files/a/b.txt", {"proxy": "a/b.txt"}),
        ("/v1/jobs", "/v1/jobsx", None),
    ],
)
def test_given_resource_when_matching_paths_then_parameters_are_captured(
    resource: str, path: str, expected: dict[str, str] | None
) -> None:
    match = compile_resource(resource).match(path)

    assert (match.groupdict() if match else None) == expected


def test_given_proxy_result_when_converting_then_headers_merge_and_multi_values_win() -> None:
    response = to_http_response(
        {
            "statusCode": 201,
            "headers": {"Content-Type": "text/plain", "X-One": "a", "Content-Length": "999"},
            "multiValueHeaders": {"X-One": ["b", "c"], "Set-Cookie": ["s=1", "t=2"]},
            "body": "created",
            "isBase64Encoded": False,
        }
    )

    assert response.status == 201
    assert list(response.headers) == [
        ("Content-Type", "text/plain"),
        ("X-One", "b"),
        ("X-One", "c"),
        ("Set-Cookie", "s=1"),
        ("Set-Cookie", "t=2"),
    ]
    assert response.body == b"created"


def test_given_base64_result_without_content_type_when_converting_then_body_is_decoded() -> None:
    response = to_http_response(
        {"statusCode": 200, "body": base64.b64encode(b"\x00\x01").decode(), "isBase64Encoded": True}
    )

    assert response.body == b"\x00\x01"
    assert ("Content-Type", "application/json") in response.headers


@pytest.mark.parametrize("result", [None, "text", {"body": "no status"}, {"statusCode": "200"}])
def test_given_malformed_result_when_converting_then_it_is_a_502_like_api_gateway(result: Any) -> None:
    response = to_http_response(result)

    assert response.status == 502
    assert json.loads(response.body) == {"message": "Internal server error"}


def _gateway(invoke: Any, local: dict[str, Any] | None = None) -> Gateway:
    return Gateway(
        [
            ApiRoute("GET", "/v1/jobs/{id}", invoke),
            ApiRoute("GET", "/v1/jobs/batch", lambda event: {"statusCode": 200, "body": "literal"}),
        ],
        stage="dev",
        local_routes=local,
    )


def test_given_undeclared_path_or_method_when_requested_then_403_missing_authentication_token() -> None:
    gateway = _gateway(lambda event: {"statusCode": 200, "body": "{}"})

    for method, target in [("GET", "/nope"), ("DELETE", "/v1/jobs/abc")]:
        response = gateway.handle(HttpRequest(method, target))
        assert response.status == 403
        assert json.loads(response.body) == {"message": "Missing Authentication Token"}


def test_given_the_templates_gateway_responses_when_no_function_answers_then_the_envelope_comes_back() -> (
    None
):
    def fail(event: dict[str, Any]) -> Any:
        raise RuntimeError("boom")

    def hang(event: dict[str, Any]) -> Any:
        raise TimeoutError

    responses = gateway_responses(load_template())
    routes = [ApiRoute("GET", "/fails", fail), ApiRoute("GET", "/hangs", hang)]
    gateway = Gateway(routes, stage="dev", gateway_responses=responses)

    unknown = gateway.handle(HttpRequest("GET", "/nope"))
    wrong_method = gateway.handle(HttpRequest("DELETE", "/fails"))
    failed = gateway.handle(HttpRequest("GET", "/fails"))
    timed_out = gateway.handle(HttpRequest("GET", "/hangs"))

    assert (unknown.status, json.loads(unknown.body)["error"]["code"]) == (404, "not_found")
    assert (wrong_method.status, json.loads(wrong_method.body)["error"]["code"]) == (404, "not_found")
    assert json.loads(failed.body) == {
        "error": {"code": "gateway_error", "message": "Internal server error", "details": []}
    }
    assert failed.status == 502  # DEFAULT_5XX keeps the type's own status
    assert (timed_out.status, json.loads(timed_out.body)["error"]["code"]) == (504, "timeout")


def test_given_literal_and_parameter_routes_when_both_match_then_the_literal_one_wins() -> None:
    gateway = _gateway(lambda event: {"statusCode": 200, "body": "parameter"})

    assert gateway.handle(HttpRequest("GET", "/v1/jobs/batch")).body == b"literal"
    assert gateway.handle(HttpRequest("GET", "/v1/jobs/other")).body == b"parameter"


def test_given_handler_that_raises_when_requested_then_502() -> None:
    def fail(event: dict[str, Any]) -> Any:
        raise RuntimeError("boom")

    response = _gateway(fail).handle(HttpRequest("GET", "/v1/jobs/abc"))

    assert response.status == 502


def test_given_local_route_when_requested_then_it_gets_the_plain_request() -> None:
    seen: list[HttpRequest] = []

    def serve(request: HttpRequest) -> HttpResponse:
        seen.append(request)
        return HttpResponse(204)

    gateway = _gateway(lambda event: {}, {"/dev/sink": serve})

    assert gateway.handle(HttpRequest("PUT", "/dev/sink/deeper", body=b"x")).status == 204
    assert seen[0].body == b"x"


def test_given_powertools_app_behind_server_when_called_over_http_then_the_round_trip_is_faithful() -> None:
    app = APIGatewayRestResolver()

    @app.post("/items/<item_id>")
    def create(item_id: str) -> dict[str, Any]:
        event = app.current_event
        return {
            "id": item_id,
            "json": event.json_body,
            "query": event.query_string_parameters,
            "resource": event.resource,
        }

    def invoke(event: dict[str, Any]) -> Any:
        return app.resolve(event, LocalContext("f", 3, 128, "us-east-1"))

    server = GatewayServer(Gateway([ApiRoute("POST", "/items/{item_id}", invoke)], "dev"), port=0)
    server.start()
    try:
        with httpx.Client(base_url=server.url, timeout=5) as client:
            response = client.post("/items/i1", params={"q": "x"}, json={"n": 1})
            missing = client.get("/items/i1")
    finally:
        server.stop()

    assert response.status_code == 200
    assert response.json() == {
        "id": "i1",
        "json": {"n": 1},
        "query": {"q": "x"},
        "resource": "/items/{item_id}",
    }
    assert missing.status_code == 403


def test_given_context_when_time_passes_then_remaining_time_counts_down_from_the_timeout() -> None:
    context = LocalContext("hookline-local-ExecuteFunction", 420, 1024, "eu-west-1")

    remaining = context.get_remaining_time_in_millis()

    assert 419_000 < remaining <= 420_000
    assert context.invoked_function_arn.endswith(":function:hookline-local-ExecuteFunction")
    assert context.invoked_function_arn.startswith("arn:aws:lambda:eu-west-1:")
    assert context.memory_limit_in_mb == 1024
    assert context.aws_request_id != LocalContext("f", 1, 128, "us-east-1").aws_request_id
