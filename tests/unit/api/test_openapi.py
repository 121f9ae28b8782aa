"""The generated OpenAPI document and the docs page, served without a key and without any network."""

from __future__ import annotations

import re

from hookline_local.template import api_routes, load_template
from tests.support.apigw import ApiClient

# Routes the cron work adds; the jobs API does not serve them (yet).
SCHEDULE_PREFIX = "/v1/schedules"
UNDOCUMENTED = {"/openapi.json", "/docs", "/dashboard"}


def openapi() -> dict[str, object]:
    response = ApiClient().get("/openapi.json")
    assert response.status == 200
    assert response.headers["content-type"] == "application/json"
    document = response.json()
    assert isinstance(document, dict)
    return document


def test_given_template_routes_when_generating_openapi_then_each_api_route_is_documented() -> None:
    paths = openapi()["paths"]
    assert isinstance(paths, dict)

    expected = {
        (route.method.lower(), re.sub(r"\{id\}", "{job_id}", route.path))
        for route in api_routes(load_template())
        if route.function_id == "SubmitFunction"
        and not route.path.startswith(SCHEDULE_PREFIX)
        and route.path not in UNDOCUMENTED
    }
    documented = {
        (method, path)
        for path, operations in paths.items()
        if not path.startswith(SCHEDULE_PREFIX)
        for method in operations
    }
    assert documented == expected


def test_given_openapi_when_reading_errors_then_every_keyed_operation_documents_the_envelope() -> None:
    document = openapi()
    paths = document["paths"]
    assert isinstance(paths, dict)

    for path, operations in paths.items():
        for method, operation in operations.items():
            if path == "/healthz":
                assert operation["security"] == [{}]  # no key needed
                continue
            envelope = operation["responses"]["401"]["content"]["application/json"]["schema"]
            assert envelope == {"$ref": "#/components/schemas/ErrorEnvelope"}, (method, path)
            assert "422" in operation["responses"], (method, path)
    assert document["security"] == [{"bearer": []}]


def test_given_browser_when_opening_docs_then_swagger_ui_with_the_inlined_document() -> None:
    response = ApiClient().get("/docs")

    assert response.status == 200
    assert response.headers["content-type"].startswith("text/html")
    assert "swagger-ui" in response.body
    assert '"/v1/jobs/batch"' in response.body


def test_given_openapi_when_reading_operations_then_each_has_a_unique_camel_case_operation_id() -> None:
    paths = openapi()["paths"]
    assert isinstance(paths, dict)

    ids = [operation.get("operationId") for operations in paths.values() for operation in operations.values()]

    assert all(isinstance(i, str) and re.fullmatch(r"[a-z]+(?:[A-Z][a-z]+)*", i) for i in ids), ids
    assert len(ids) == len(set(ids))
    assert {"submitJob", "getJob", "listJobs", "getStats", "replayDeadLetters", "updateSchedule"} <= set(ids)
