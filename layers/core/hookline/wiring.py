"""The composition root: builds every adapter and use case once per process (a Lambda cold start)."""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import boto3
import redis
from botocore.config import Config

from hookline.auth import Authenticator
from hookline.callback.client import HttpCallbackClient
from hookline.callback.safety import check_url
from hookline.clock import Clock, SystemClock
from hookline.dynamo.job_store import DynamoJobStore
from hookline.dynamo.key_store import DynamoKeyStore
from hookline.ports import MetricsSink, NullMetrics
from hookline.redis_index import RedisIndex
from hookline.settings import Settings
from hookline.signing_secrets import SigningSecretProvider
from hookline.usecases.execute import Executor
from hookline.usecases.promote import Promoter
from hookline.usecases.reap import Reaper
from hookline.usecases.submit import JobSubmitter


def dynamodb_client(settings: Settings, max_connections: int = 50) -> Any:
    """Returns a DynamoDB client for the configured endpoint (moto or LocalStack locally, AWS otherwise)."""
    return boto3.client(
        "dynamodb",
        endpoint_url=settings.aws_endpoint_url,
        region_name=settings.aws_region,
        config=Config(max_pool_connections=max_connections, retries={"mode": "standard", "max_attempts": 5}),
    )


def redis_client(settings: Settings) -> redis.Redis:
    """Returns a Redis client whose socket timeout outlasts the longest blocking read."""
    return redis.Redis.from_url(
        settings.redis_url, socket_timeout=30, socket_connect_timeout=5, health_check_interval=30
    )


@dataclass
class Container:
    """Holds the process's clients and use cases; each is built on first use and then reused."""

    settings: Settings
    clock: Clock = field(default_factory=SystemClock)
    metrics: MetricsSink = field(default_factory=NullMetrics)
    consumer: str = field(default_factory=lambda: f"executor-{os.getpid()}-{uuid.uuid4().hex[:8]}")

    @property
    def shards(self) -> list[int]:
        """Returns every shard number."""
        return list(range(self.settings.shards))

    @cached_property
    def redis(self) -> redis.Redis:
        """The Redis client."""
        return redis_client(self.settings)

    @cached_property
    def dynamodb(self) -> Any:
        """The DynamoDB client (thread-safe; shared by executor threads)."""
        return dynamodb_client(self.settings, max_connections=self.settings.executor_concurrency + 10)

    @cached_property
    def index(self) -> RedisIndex:
        """The Redis live indexes."""
        return RedisIndex(self.redis, consumer=self.consumer)

    @cached_property
    def jobs(self) -> DynamoJobStore:
        """The jobs and executions tables."""
        return DynamoJobStore(
            self.dynamodb,
            self.settings.jobs_table,
            self.settings.executions_table,
            lease_margin_ms=self.settings.lease_margin_ms,
        )

    @cached_property
    def keys(self) -> DynamoKeyStore:
        """The API keys table."""
        return DynamoKeyStore(self.dynamodb, self.settings.api_keys_table)

    @cached_property
    def authenticator(self) -> Authenticator:
        """Checks API keys."""
        return Authenticator(self.keys, self.clock)

    @cached_property
    def submitter(self) -> JobSubmitter:
        """The submit use case."""
        allow_loopback = self.settings.allow_loopback
        return JobSubmitter(
            self.jobs,
            self.index,
            self.clock,
            lambda url: check_url(url, allow_loopback),
            self.settings.shards,
            self.metrics,
        )

    @cached_property
    def promoter(self) -> Promoter:
        """The promote use case."""
        return Promoter(
            self.index, self.clock, self.shards, self.metrics, self.settings.promoter_max_sleep_ms
        )

    @cached_property
    def callbacks(self) -> HttpCallbackClient:
        """The outbound HTTP client (thread-safe; shared by executor threads)."""
        return HttpCallbackClient(allow_loopback=self.settings.allow_loopback)

    @cached_property
    def executor(self) -> Executor:
        """The execute use case."""
        for shard in self.shards:
            self.index.ensure_group(shard)
        return Executor(
            self.jobs,
            self.index,
            self.clock,
            self.callbacks,
            SigningSecretProvider(self.keys, self.clock),
            self.metrics,
            self.shards,
            concurrency=self.settings.executor_concurrency,
            tenant_max_concurrency=self.settings.tenant_max_concurrency,
        )

    @cached_property
    def reaper(self) -> Reaper:
        """The reap use case."""
        return Reaper(
            self.jobs,
            self.index,
            self.clock,
            self.shards,
            self.metrics,
            redeliver_after_ms=self.settings.redeliver_after_ms,
            max_deliveries=self.settings.max_deliveries,
        )

    def close(self) -> None:
        """Closes the clients this container opened (Lambda never needs this; tests and tools do)."""
        opened = self.__dict__
        if "redis" in opened:
            self.redis.close()
            self.redis.connection_pool.disconnect()
        if "dynamodb" in opened:
            self.dynamodb.close()
        if "callbacks" in opened:
            self.callbacks.close()
