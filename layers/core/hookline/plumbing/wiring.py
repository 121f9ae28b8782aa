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

from hookline.adapters.dynamo.job_store import DynamoJobStore
from hookline.adapters.dynamo.key_store import DynamoKeyStore
from hookline.adapters.dynamo.schedule_store import DynamoScheduleStore
from hookline.adapters.http.client import HttpCallbackClient
from hookline.adapters.http.safety import check_url
from hookline.adapters.lambda_launcher import LambdaLauncher
from hookline.adapters.redis.index import RedisIndex
from hookline.domain.clock import SystemClock
from hookline.plumbing.settings import Settings
from hookline.ports import Clock, ExecutorLauncher, MetricsSink, NullMetrics
from hookline.usecases.auth import Authenticator
from hookline.usecases.cron import CronRunner, ScheduleReconciler
from hookline.usecases.execute import Executor
from hookline.usecases.manage import JobManager
from hookline.usecases.promote import Promoter
from hookline.usecases.reap import Reaper
from hookline.usecases.scale import ExecutorScaler, FanOutPolicy, NoLauncher
from hookline.usecases.schedules import FrequencyFloor, ScheduleManager
from hookline.usecases.signing_secrets import SigningSecretProvider
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
        settings.redis_url, socket_timeout=30, socket_connect_timeout=1, health_check_interval=30
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
    def manager(self) -> JobManager:
        """The job administration use cases (read, list, cancel, replay)."""
        return JobManager(self.jobs, self.index, self.clock, self.metrics)

    @cached_property
    def promoter(self) -> Promoter:
        """The promote use case."""
        return Promoter(
            self.index,
            self.clock,
            self.shards,
            self.metrics,
            self.settings.promoter_max_sleep_ms,
            cron=self.cron,
        )

    @cached_property
    def schedule_store(self) -> DynamoScheduleStore:
        """Schedule items, their instances and listings in the jobs table."""
        return DynamoScheduleStore(self.dynamodb, self.settings.jobs_table)

    @cached_property
    def cron(self) -> CronRunner:
        """The promoter's cron pass: fires each occurrence of every schedule once."""
        return CronRunner(
            self.schedule_store,
            self.index,
            self.submitter,
            self.clock,
            self.shards,
            self.metrics,
            misfire_grace_ms=self.settings.cron_misfire_grace_ms,
            job_shards=self.settings.shards,
        )

    @cached_property
    def schedules(self) -> ScheduleManager:
        """The schedule administration use cases (API)."""
        allow_loopback = self.settings.allow_loopback
        floor = FrequencyFloor(self.settings.cron_min_interval_ms, self.settings.cron_tenant_floors_ms())
        return ScheduleManager(
            self.schedule_store,
            self.index,
            self.clock,
            lambda url: check_url(url, allow_loopback),
            self.settings.shards,
            floor,
            self.metrics,
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
            self.index,
            self.index,
            self.clock,
            self.callbacks,
            SigningSecretProvider(self.keys, self.clock),
            self.metrics,
            self.shards,
            concurrency=self.settings.executor_concurrency,
            tenant_max_concurrency=self.settings.tenant_max_concurrency,
            tenant_rate_limit_per_s=self.settings.tenant_rate_limit_per_s,
        )

    @cached_property
    def reaper(self) -> Reaper:
        """The reap use case."""
        return Reaper(
            self.jobs,
            self.index,
            self.index,
            self.clock,
            self.shards,
            self.metrics,
            redeliver_after_ms=self.settings.redeliver_after_ms,
            max_deliveries=self.settings.max_deliveries,
            schedules=ScheduleReconciler(self.schedule_store, self.index, self.clock),
        )

    @cached_property
    def executor_launcher(self) -> ExecutorLauncher:
        """Starts extra executors: async invokes of HOOKLINE_EXECUTE_FUNCTION (the local stack swaps it)."""
        name = self.settings.execute_function
        if name is None:
            return NoLauncher()
        settings = self.settings
        return LambdaLauncher(
            lambda: boto3.client(
                "lambda", endpoint_url=settings.aws_endpoint_url, region_name=settings.aws_region
            ),
            name,
        )

    @cached_property
    def fan_out(self) -> ExecutorScaler:
        """The fan-out use case: more executors while the ready streams back up."""
        policy = FanOutPolicy(backlog_per_executor=2 * self.settings.executor_concurrency)
        return ExecutorScaler(
            self.index, self.clock, self.shards, self.executor_launcher, self.metrics, policy
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
