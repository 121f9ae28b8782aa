"""The cluster-aware client the engine gets with HOOKLINE_REDIS_CLUSTER: built without connecting."""

from __future__ import annotations

import dataclasses

import pytest

from hookline.domain.errors import IndexUnavailable
from hookline.domain.models import Member
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container
from tests.support.redis_server import free_port

pytestmark = pytest.mark.integration


def test_given_cluster_unreachable_when_engine_cold_starts_then_it_builds_and_calls_fail_as_index_unavailable(
    settings: Settings,
) -> None:
    # redis-py's RedisCluster reads the slot map in its constructor: built at a cold start during an
    # outage it would raise (RedisClusterException, not even a RedisError) and the invocation would fail.
    nowhere = dataclasses.replace(settings, redis_url=f"redis://127.0.0.1:{free_port()}", redis_cluster=True)
    container = Container(nowhere, consumer="cold-executor")
    try:
        executor, promoter = container.executor, container.promoter

        with pytest.raises(IndexUnavailable):
            container.index.read_ready([0], 10, 0)
        with pytest.raises(IndexUnavailable):
            promoter.tick()
        with pytest.raises(IndexUnavailable):
            container.index.index(Member("acme", "job1", 1), 0, 0, 0)
        assert executor is container.executor
    finally:
        container.close()
