"""The schedule routes through the API handler, with API Gateway proxy events."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from hookline.adapters.redis import keys as redis_keys
from hookline.api import context
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container
from tests.fakes.clock import FrozenClock
from tests.integration.api.conftest import make_key
from tests.integration.cron.conftest import minute, run_until
from tests.support.apigw import ApiClient, ApiResponse

pytestmark = pytest.mark.integration

JOB = {"url": "http://127.0.0.1:9/tick", "body": {"hello": "world"}}


@dataclasses.dataclass
class Clients:
    acme: ApiClient
    globex: ApiClient
    read_only: ApiClient


@pytest.fixture
def api(frozen: Container) -> Iterator[Clients]:
    context.use(frozen)
    yield Clients(
        ApiClient(make_key(frozen)),
        ApiClient(make_key(frozen, "globex")),
        ApiClient(make_key(frozen, scopes=("schedules:read",))),
    )


def create(client: ApiClient, **fields: Any) -> ApiResponse:
    return client.post("/v1/schedules", {"expression": "*/15 * * * *", "job": JOB, **fields})


def test_given_valid_schedule_when_posted_then_201_and_get_shows_next_five_fire_times_in_its_zone(
    api: Clients,
) -> None:
    created = create(api.acme, expression="0 9 * * *", timezone="Europe/London")

    assert created.status == 201
    body = created.json()
    assert {k: body[k] for k in ("expression", "timezone", "catch_up", "paused", "version")} == {
        "expression": "0 9 * * *",
        "timezone": "Europe/London",
        "catch_up": "skip",
        "paused": False,
        "version": 1,
    }
    got = api.acme.get(f"/v1/schedules/{body['id']}").json()
    assert got["next_fire_times"] == [f"2026-01-0{d}T09:00:00.000Z" for d in range(1, 6)]
    assert got["job"]["url"] == JOB["url"]


def test_given_schedules_when_listed_then_each_shows_its_next_occurrence_and_a_paused_one_none(
    api: Clients,
) -> None:
    running = create(api.acme, expression="0 9 * * *", timezone="Europe/London").json()
    paused = create(api.acme, expression="0 9 * * *", paused=True).json()

    listed = {s["id"]: s for s in api.acme.get("/v1/schedules").json()["schedules"]}

    assert listed[running["id"]]["next_fire_times"] == ["2026-01-01T09:00:00.000Z"]
    assert listed[paused["id"]]["next_fire_times"] == []


@pytest.mark.parametrize(
    ("fields", "field", "reason"),
    [
        ({"expression": "* * *"}, "expression", "5 fields"),
        ({"expression": "70 * * * *"}, "expression", "invalid cron expression"),
        ({"timezone": "Mars/Olympus_Mons"}, "timezone", "unknown IANA timezone"),
        ({"job": {**JOB, "delay_s": 5}}, "job", "not allowed in a schedule"),
        ({"catch_up": "burst"}, "catch_up", ""),
        ({"start_at": "2026-02-01T00:00:00Z", "end_at": "2026-01-01T00:00:00Z"}, "", "end_at must be after"),
    ],
)
def test_given_invalid_schedule_when_posted_then_422_names_the_field_and_reason(
    api: Clients, fields: dict[str, Any], field: str, reason: str
) -> None:
    response = create(api.acme, **fields)

    assert response.status == 422
    assert response.error_code == "validation_error"
    details = response.json()["error"]["details"]
    assert any(d["field"].startswith(field) and reason in d["message"] for d in details), details


def test_given_expression_that_never_fires_when_posted_then_422(api: Clients) -> None:
    response = create(api.acme, expression="0 0 30 2 *")

    assert (response.status, response.error_code) == (422, "validation_error")
    assert "never fires" in response.json()["error"]["message"]


def test_given_tenant_floor_when_schedule_fires_more_often_then_422_schedule_too_frequent(
    settings: Settings, clock: FrozenClock
) -> None:
    floored = dataclasses.replace(
        settings, cron_min_interval_ms=60_000, cron_tenant_min_interval_ms="globex=3600000"
    )
    container = Container(floored, clock=clock)
    context.use(container)
    acme, globex = ApiClient(make_key(container)), ApiClient(make_key(container, "globex"))

    too_fast = create(acme, expression="*/30 * * * * *")
    per_minute = create(acme, expression="* * * * *")
    globex_per_minute = create(globex, expression="* * * * *")

    assert (too_fast.status, too_fast.error_code) == (422, "schedule_too_frequent")
    assert "30 s" in too_fast.json()["error"]["message"]
    assert per_minute.status == 201
    assert (globex_per_minute.status, globex_per_minute.error_code) == (422, "schedule_too_frequent")
    container.close()


def test_given_schedules_when_listed_then_paged_newest_first_with_a_cursor(
    api: Clients, clock: FrozenClock
) -> None:
    ids = []
    for _ in range(3):
        ids.append(create(api.acme).json()["id"])
        clock.advance(1)

    first = api.acme.get("/v1/schedules", query={"limit": "2"}).json()
    second = api.acme.get("/v1/schedules", query={"limit": "2", "cursor": first["next"]}).json()

    assert [s["id"] for s in first["schedules"]] == ids[::-1][:2]
    assert [s["id"] for s in second["schedules"]] == ids[:1]
    assert second["next"] is None
    assert api.globex.get("/v1/schedules").json() == {"schedules": [], "next": None}


def test_given_schedule_when_patched_paused_resumed_and_deleted_then_each_answer_and_the_index_agree(
    api: Clients, frozen: Container
) -> None:
    schedule_id = create(api.acme).json()["id"]
    path = f"/v1/schedules/{schedule_id}"

    paused = api.acme.request("PATCH", path, json_body={"paused": True})
    no_times = api.acme.get(path).json()["next_fire_times"]
    resumed = api.acme.request("PATCH", path, json_body={"paused": False, "expression": "0 * * * *"})
    members = [m.decode() for m in frozen.redis.zrange(redis_keys.cron_key(0), 0, -1)]
    deleted = api.acme.delete(path)

    assert (paused.status, paused.json()["paused"], paused.json()["version"]) == (200, True, 2)
    assert no_times == []
    assert (resumed.status, resumed.json()["expression"], resumed.json()["version"]) == (200, "0 * * * *", 3)
    assert members == [f"acme/{schedule_id}/3"]
    assert deleted.status == 204
    assert api.acme.get(path).status == 404
    assert frozen.redis.zcard(redis_keys.cron_key(0)) == 0


def test_given_schedule_that_fired_when_listing_its_jobs_then_newest_first_with_schedule_id(
    api: Clients, frozen: Container, clock: FrozenClock
) -> None:
    schedule_id = create(api.acme, expression="* * * * *").json()["id"]
    run_until(frozen, clock, minute(3, 30))

    page = api.acme.get(f"/v1/schedules/{schedule_id}/jobs", query={"limit": "2"}).json()
    rest = api.acme.get(f"/v1/schedules/{schedule_id}/jobs", query={"cursor": page["next"]}).json()

    assert [job["run_at"] for job in page["jobs"] + rest["jobs"]] == [
        "2026-01-01T00:03:00.000Z",
        "2026-01-01T00:02:00.000Z",
        "2026-01-01T00:01:00.000Z",
    ]
    assert {job["schedule_id"] for job in page["jobs"]} == {schedule_id}
    assert rest["next"] is None


def test_given_other_tenant_or_missing_scope_then_404_and_403(api: Clients) -> None:
    schedule_id = create(api.acme).json()["id"]

    assert api.globex.get(f"/v1/schedules/{schedule_id}").status == 404
    assert api.globex.get(f"/v1/schedules/{schedule_id}/jobs").status == 404
    assert api.globex.delete(f"/v1/schedules/{schedule_id}").status == 404
    assert (
        api.globex.request("PATCH", f"/v1/schedules/{schedule_id}", json_body={"paused": True}).status == 404
    )
    forbidden = create(api.read_only)
    assert (forbidden.status, forbidden.error_code) == (403, "forbidden")
    assert api.read_only.get(f"/v1/schedules/{schedule_id}").status == 200  # reading needs only read


def test_given_schedule_when_window_patched_then_next_times_follow_and_null_removes_a_bound(
    api: Clients,
) -> None:
    # The clock stands at 2026-01-01T00:00:30Z; the schedule fires every 15 minutes.
    schedule_id = create(api.acme).json()["id"]
    path = f"/v1/schedules/{schedule_id}"

    windowed = api.acme.request(
        "PATCH", path, json_body={"start_at": "2026-01-01T01:00:00Z", "end_at": "2026-01-01T01:30:00Z"}
    )
    windowed_times = api.acme.get(path).json()["next_fire_times"]
    expression_only = api.acme.request("PATCH", path, json_body={"expression": "*/30 * * * *"})
    unbounded = api.acme.request("PATCH", path, json_body={"end_at": None})
    unbounded_times = api.acme.get(path).json()["next_fire_times"]
    inverted = api.acme.request("PATCH", path, json_body={"end_at": "2026-01-01T00:30:00Z"})
    naive = api.acme.request("PATCH", path, json_body={"start_at": "2026-01-01T01:00:00"})

    assert windowed.status == 200
    assert (windowed.json()["start_at"], windowed.json()["end_at"]) == (
        "2026-01-01T01:00:00.000Z",
        "2026-01-01T01:30:00.000Z",
    )
    assert windowed_times == [
        "2026-01-01T01:00:00.000Z",
        "2026-01-01T01:15:00.000Z",
        "2026-01-01T01:30:00.000Z",
    ]
    assert (expression_only.json()["start_at"], expression_only.json()["end_at"]) == (
        "2026-01-01T01:00:00.000Z",
        "2026-01-01T01:30:00.000Z",
    )
    assert (unbounded.status, unbounded.json()["start_at"], unbounded.json()["end_at"]) == (
        200,
        "2026-01-01T01:00:00.000Z",
        None,
    )
    assert unbounded_times[:3] == [
        "2026-01-01T01:00:00.000Z",
        "2026-01-01T01:30:00.000Z",
        "2026-01-01T02:00:00.000Z",
    ]
    assert len(unbounded_times) == 5
    assert (inverted.status, inverted.error_code) == (422, "validation_error")
    assert "end_at must be after start_at" in inverted.body
    assert naive.status == 422
    assert api.acme.get(path).json()["version"] == 4  # the refused patches changed nothing
