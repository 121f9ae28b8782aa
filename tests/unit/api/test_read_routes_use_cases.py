"""Every job read route goes through the JobManager use case: with the adapters made unusable and the use
cases on fakes, the routes still answer (and a tenant sees only its own jobs)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from hookline.api import context
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container
from hookline.usecases.auth import Authenticator, mint_key
from tests.fakes.callbacks import response
from tests.fakes.keys import FakeKeyStore
from tests.support.apigw import ApiClient
from tests.unit.usecases.world import T0, TENANT, World


class NoDirectAccess:
    """Stands in for an adapter no route may call directly: any use fails the test."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"a route used the adapter directly ({name}); routes go through use cases")


@dataclass
class Routes:
    """The engine on fakes behind the routes, and the key store their gate reads."""

    world: World
    keys: FakeKeyStore

    def client(self, tenant: str = TENANT) -> ApiClient:
        """Returns a client with a fresh key of tenant."""
        record, api_key = mint_key(tenant, T0)
        self.keys.put_key(record)
        return ApiClient(api_key)


@pytest.fixture
def routes(monkeypatch: pytest.MonkeyPatch) -> Routes:
    """Points the routes at a container whose use cases run on fakes and whose adapters refuse any use."""
    built = World()
    unreachable = Settings(redis_url="redis://127.0.0.1:1/0", aws_endpoint_url="http://127.0.0.1:1")
    container = Container(unreachable, clock=built.clock)
    keys = FakeKeyStore()
    container.__dict__.update(
        authenticator=Authenticator(keys, built.clock),
        index=built.redis("api"),  # the gate's per-key rate limit
        manager=built.manager(),
        jobs=NoDirectAccess(),
        keys=NoDirectAccess(),
        redis=NoDirectAccess(),
        dynamodb=NoDirectAccess(),
    )
    monkeypatch.setattr(context, "_container", container)
    return Routes(built, keys)


def test_given_job_when_read_through_the_routes_then_served_by_the_use_case(routes: Routes) -> None:
    routes.world.callbacks.then(response(500))
    job = routes.world.submit()
    routes.world.drain()
    mine, theirs = routes.client(), routes.client("globex")

    got = mine.get(f"/v1/jobs/{job.job_id}")
    executions = mine.get(f"/v1/jobs/{job.job_id}/executions")

    assert got.status == 200, got.body
    assert (got.json()["id"], got.json()["status"]) == (job.job_id, "scheduled")
    assert executions.status == 200, executions.body
    assert [(e["attempt"], e["status_code"]) for e in executions.json()["executions"]] == [(1, 500)]
    assert theirs.get(f"/v1/jobs/{job.job_id}").status == 404
    assert theirs.get(f"/v1/jobs/{job.job_id}/executions").status == 404
    assert mine.get("/v1/jobs/01KDVDNA00R4AD5CTDHKN47WVJ/executions").status == 404


def test_given_jobs_when_listed_through_the_routes_then_served_by_the_use_case(routes: Routes) -> None:
    routes.world.callbacks.then(response(404))
    dead = routes.world.submit()
    routes.world.drain()
    mine = routes.client()

    listed = mine.get("/v1/jobs")
    dead_letters = mine.get("/v1/dead-letters")

    assert [j["id"] for j in listed.json()["jobs"]] == [dead.job_id]
    assert [j["id"] for j in dead_letters.json()["jobs"]] == [dead.job_id]
