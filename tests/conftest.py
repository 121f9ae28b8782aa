"""Shared fixtures: a real redis-server, moto's server, tables made from template.yaml, a test container.

HOOKLINE_TEST_REDIS=cluster runs the same tests against a real 3-master Redis Cluster with 4 shards: the
Redis fixtures then start the cluster, hand out cluster clients and settings in cluster mode, and fail a
test that sent a command spanning slots (tests/support/cluster_audit.py). `make test` runs the Lua table
tests and the lifecycle tests this way after the one-node run.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from typing import cast

import pytest
import redis
from redis.cluster import RedisCluster

from hookline.adapters.redis.cluster import close_cluster
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container
from tests.support.aws import make_tables, reset_moto, running_moto, use_fake_credentials
from tests.support.cluster_audit import auditing
from tests.support.dynamo_faults import DynamoFaultProxy
from tests.support.receiver import Receiver
from tests.support.redis_cluster import running_cluster
from tests.support.redis_mode import CLUSTER_MODE, SHARDS
from tests.support.redis_server import running_redis

use_fake_credentials()


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """Yields the URL of a private redis-server (or cluster node); skips locally without one, fails in CI."""
    if not os.environ.get("REDIS_URL") and shutil.which("redis-server") is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is required in CI")
        pytest.skip("redis-server is not installed")
    with running_cluster() if CLUSTER_MODE else running_redis() as url:
        yield url


@pytest.fixture(scope="session")
def cluster_client(redis_url: str) -> Iterator[RedisCluster]:
    """Yields one cluster client for the session (each new one maps the cluster and reads COMMAND)."""
    cluster = RedisCluster.from_url(redis_url)
    yield cluster
    close_cluster(cluster)


@pytest.fixture
def redis_client(redis_url: str, request: pytest.FixtureRequest) -> Iterator[redis.Redis]:
    """Yields a client to an empty Redis (flushed before each test).

    In the cluster run it is a RedisCluster (typed as the one-node client the adapters take), and the test
    fails if any command spanned slots, refused by the client or answered CROSSSLOT/MOVED/ASK by a node.
    """
    if not CLUSTER_MODE:
        client = redis.Redis.from_url(redis_url)
        client.flushall()
        yield client
        client.close()
        return
    cluster: RedisCluster = request.getfixturevalue("cluster_client")
    cluster.flushall()
    with auditing(cluster) as audit:
        yield cast(redis.Redis, cluster)
        refused, replied = audit.refused, audit.server_errors()
    assert refused == [], f"commands spanning slots were sent: {refused}"
    assert replied == dict.fromkeys(replied, 0), f"the cluster answered slot errors: {replied}"


@pytest.fixture(scope="session")
def aws_endpoint() -> Iterator[str]:
    """Yields the endpoint of moto's server (started once per session) or of HOOKLINE_AWS_ENDPOINT."""
    with running_moto() as url:
        yield url


@pytest.fixture(scope="session")
def dynamo_proxy(aws_endpoint: str) -> Iterator[DynamoFaultProxy]:
    """Yields an HTTP proxy in front of moto's server that injects planned DynamoDB faults (started once)."""
    with DynamoFaultProxy(aws_endpoint) as proxy:
        yield proxy


@pytest.fixture
def dynamo_faults(dynamo_proxy: DynamoFaultProxy) -> Iterator[DynamoFaultProxy]:
    """Yields the fault proxy with nothing planned; a client given its url meets the faults the test plans.

    Fails the test when a lost reply's between() raised (it runs on the proxy's thread).
    """
    dynamo_proxy.reset()
    yield dynamo_proxy
    errors = dynamo_proxy.replies.errors
    dynamo_proxy.reset()
    assert errors == [], f"a lost reply's between() raised: {errors!r}"


@pytest.fixture
def settings(aws_endpoint: str, redis_client: redis.Redis, redis_url: str) -> Settings:
    """Returns settings for one test: empty Redis, fresh tables, loopback callbacks allowed, short leases."""
    reset_moto(aws_endpoint)
    suffix = uuid.uuid4().hex[:8]
    result = Settings(
        redis_url=redis_url,
        redis_cluster=CLUSTER_MODE,
        shards=SHARDS,
        jobs_table=f"jobs-{suffix}",
        executions_table=f"executions-{suffix}",
        api_keys_table=f"api-keys-{suffix}",
        aws_endpoint_url=aws_endpoint,
        allow_loopback=True,
        executor_concurrency=8,
        # Short leases: 2 s, renewed from 1 s left by a 100 ms heartbeat; idle entries re-delivered after
        # 0.5 s by recoveries every 0.2 s (LeaseTiming checks these keep its invariants).
        lease_ms=2_000,
        lease_margin_ms=200,
        heartbeat_ms=100,
        redeliver_after_ms=500,
        recover_every_ms=200,
        promoter_max_sleep_ms=200,
    )
    make_tables(result)
    return result


@pytest.fixture
def container(settings: Settings) -> Iterator[Container]:
    """Yields a container wired to the test's Redis and tables."""
    built = Container(settings, consumer="test-executor")
    yield built
    built.close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """Yields a real HTTP receiver on 127.0.0.1 that records every callback."""
    with Receiver() as running:
        yield running
