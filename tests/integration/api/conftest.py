"""Fixtures for driving the submit handler: the test container behind the routes, keys for two tenants."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from hookline.adapters.redis import keys as redis_keys
from hookline.api import context
from hookline.domain.models import Job, JobRequest, JobStatus
from hookline.plumbing.wiring import Container
from hookline.usecases.auth import ALL_SCOPES, mint_key
from tests.support.apigw import ApiClient, payload_format  # noqa: F401 - a fixture for the modules
from tests.support.http_api import serving_api
from tests.support.receiver import Receiver, Reply

TENANT = "acme"
OTHER_TENANT = "globex"


def make_key(
    container: Container,
    tenant: str = TENANT,
    scopes: tuple[str, ...] = ALL_SCOPES,
    rate_limit_per_s: int | None = None,
) -> str:
    """Stores a new API key and returns its text."""
    record, api_key = mint_key(tenant, container.clock.now_ms(), scopes, rate_limit_per_s)
    container.keys.put_key(record)
    return api_key


@dataclass
class Api:
    """The handler as two tenants see it, and the container behind it."""

    container: Container
    acme: ApiClient
    globex: ApiClient

    def submit(self, url: str = "http://127.0.0.1:9/hook", tenant: str = TENANT, **fields: object) -> Job:
        """Stores a job directly through the use case (fast setup, no HTTP)."""
        request = JobRequest.model_validate({"url": url, **fields})
        return self.container.submitter.submit(tenant, request).job

    def dead_job(self, receiver: Receiver, tenant: str = TENANT) -> Job:
        """Returns a job that was delivered once, answered 404, and is now dead."""
        path = f"/gone/{len(receiver.requests)}"
        receiver.script(path, [Reply(404)])
        self.container.executor  # noqa: B018 - building it creates the consumer groups
        job = self.submit(receiver.url(path), tenant)
        self.deliver_ready()
        dead = self.container.jobs.get(tenant, job.job_id)
        assert dead.status is JobStatus.DEAD
        return dead

    def deliver_ready(self) -> int:
        """Delivers, in this thread, every entry on the ready streams; returns how many."""
        return len(self.container.executor.drain())

    def due_members(self) -> list[str]:
        """Returns the members of shard 0's due ZSET."""
        return [m.decode() for m in self.container.redis.zrange(redis_keys.due_key(0), 0, -1)]


@pytest.fixture
def api(container: Container) -> Iterator[Api]:
    """Points the routes at the test container and yields clients for two tenants."""
    context.use(container)
    # The real settings allow loopback so that dead_job's receiver on 127.0.0.1 can be called.
    yield Api(container, ApiClient(make_key(container)), ApiClient(make_key(container, OTHER_TENANT)))


@pytest.fixture
def served(api: Api) -> Iterator[str]:
    """Serves the handler over real HTTP on a free loopback port; yields its base URL."""
    with serving_api() as base_url:
        yield base_url
