"""The composition root: builds every adapter and use case once per process (a Lambda cold start)."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import uuid
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import boto3
import botocore.session
import redis
from botocore.config import Config
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from hookline.adapters.dynamo.job_store import DynamoJobStore
from hookline.adapters.dynamo.json_client import DynamoJsonClient
from hookline.adapters.dynamo.key_store import DynamoKeyStore
from hookline.adapters.dynamo.queue_store import DynamoQueueStore
from hookline.adapters.dynamo.schedule_store import DynamoScheduleStore
from hookline.adapters.dynamo.tables import Keyspace
from hookline.adapters.dynamo.unindexed import DynamoUnindexedLog
from hookline.adapters.http.client import HttpCallbackClient
from hookline.adapters.http.safety import check_url
from hookline.adapters.lambda_launcher import LambdaLauncher, LambdaWaker
from hookline.adapters.redis.cluster import cluster_client, is_cluster
from hookline.adapters.redis.index import RedisIndex
from hookline.adapters.redis.server_clock import RedisTimeClock
from hookline.adapters.redis.stats import RedisStats
from hookline.domain import constants
from hookline.domain.clock import SystemClock
from hookline.domain.errors import IndexUnavailable
from hookline.domain.idle import IdlePolicy
from hookline.plumbing.settings import Settings
from hookline.ports import (
    Clock,
    ExecutorLauncher,
    Limiters,
    MetricsSink,
    NullMetrics,
    PromoterWaker,
    UnindexedLog,
)
from hookline.usecases.auth import Authenticator
from hookline.usecases.circuit import Circuit, CircuitStats
from hookline.usecases.cron import CronRunner, ScheduleReconciler
from hookline.usecases.execute import Executor
from hookline.usecases.idle import IdleWatch, NoWaker, Wake, WakingUnindexedLog
from hookline.usecases.manage import JobManager
from hookline.usecases.promote import Promoter
from hookline.usecases.queue_admission import QueueAdmission
from hookline.usecases.queues import QueueManager
from hookline.usecases.reap import Reaper
from hookline.usecases.reconcile import JobReconciler
from hookline.usecases.scale import ExecutorScaler, FanOutPolicy, NoLauncher
from hookline.usecases.schedules import FrequencyFloor, ScheduleManager
from hookline.usecases.shards import StartUpChecks, check_bucket_count, check_shard_count
from hookline.usecases.signing_secrets import SigningSecretProvider
from hookline.usecases.submit import JobSubmitter

logger = logging.getLogger(__name__)

# botocore's defaults (60 s connect and read timeouts) let one call to a browned-out DynamoDB hang a
# thread for minutes, far past the lease (10 s) the executor holds: the attempt would then start or finish
# its callback after another executor took the job over, and its heartbeat could not renew in time.
# DynamoDB answers in milliseconds when healthy, so a call gets 2 s to connect and 5 s per read, and
# standard-mode retries (with backoff, honouring throttles) at most 3 attempts: a failure shows up as an
# error within about 20 s, which the executor handles (leave the entry pending) and the API answers with 503.
DYNAMODB_CONNECT_TIMEOUT_S = 2.0
DYNAMODB_READ_TIMEOUT_S = 5.0
DYNAMODB_MAX_ATTEMPTS = 3


# The reaper's DynamoDB calls are bounded tighter: it holds nothing a failed call would lose (each step is
# redone at the next check), and its function reserves one call's worst case (REAPER_DYNAMODB_CALL_MS) at
# the end of its run, so that no call started before its deadline outlasts the invocation. Standard-mode
# retries wait at most 2 s between attempts (jittered, doubling from 1 s).
REAPER_DYNAMODB_CONNECT_TIMEOUT_S = 1.0
REAPER_DYNAMODB_READ_TIMEOUT_S = 2.0
REAPER_DYNAMODB_MAX_ATTEMPTS = 2
REAPER_DYNAMODB_CALL_MS = int(
    1000
    * (
        REAPER_DYNAMODB_MAX_ATTEMPTS * (REAPER_DYNAMODB_CONNECT_TIMEOUT_S + REAPER_DYNAMODB_READ_TIMEOUT_S)
        + (REAPER_DYNAMODB_MAX_ATTEMPTS - 1) * 2.0
    )
)


@dataclass(frozen=True)
class DynamoBounds:
    """How long one DynamoDB call may take: connect and read timeouts, attempts."""

    connect_timeout_s: float = DYNAMODB_CONNECT_TIMEOUT_S
    read_timeout_s: float = DYNAMODB_READ_TIMEOUT_S
    max_attempts: int = DYNAMODB_MAX_ATTEMPTS


REAPER_DYNAMODB_BOUNDS = DynamoBounds(
    REAPER_DYNAMODB_CONNECT_TIMEOUT_S, REAPER_DYNAMODB_READ_TIMEOUT_S, REAPER_DYNAMODB_MAX_ATTEMPTS
)


@functools.cache
def aws_session() -> botocore.session.Session:
    """Returns the process's botocore session, made on first use.

    Both DynamoDB clients take from it: the boto3 client and the JSON client sign with its one credentials
    object (refreshed in one place when they expire), and trust the CA bundle it resolves (AWS_CA_BUNDLE).
    """
    return botocore.session.get_session()


def dynamodb_client(settings: Settings, max_connections: int = 50, bounds: DynamoBounds | None = None) -> Any:
    """Returns a DynamoDB client for the configured endpoint (moto or LocalStack locally, AWS otherwise)."""
    bounds = bounds or DynamoBounds()
    return boto3.session.Session(botocore_session=aws_session()).client(
        "dynamodb",
        endpoint_url=settings.aws_endpoint_url,
        region_name=settings.aws_region,
        config=Config(
            max_pool_connections=max_connections,
            connect_timeout=bounds.connect_timeout_s,
            read_timeout=bounds.read_timeout_s,
            retries={"mode": "standard", "total_max_attempts": bounds.max_attempts},
        ),
    )


def dynamodb_json_client(client: Any, bounds: DynamoBounds | None = None) -> DynamoJsonClient:
    """Returns the JSON client (adapters/dynamo/json_client.py) over a client of dynamodb_client.

    It has the boto3 client's session (credentials, CA bundle), timeouts and attempts.
    """
    bounds = bounds or DynamoBounds()
    session = aws_session()
    return DynamoJsonClient(
        client,
        session.get_credentials(),
        connect_timeout_s=bounds.connect_timeout_s,
        read_timeout_s=bounds.read_timeout_s,
        max_attempts=bounds.max_attempts,
        ca_bundle=session.get_config_variable("ca_bundle"),
    )


# A command that meets a dropped connection (a restart, a fail-over) is retried on a new one after 50, 100
# and 200 ms. Kept short on purpose: a longer outage surfaces as IndexUnavailable, which the loops back off
# from on their own (capped at 1 s), and an API call must not hang on Redis. A retried script may run twice
# when only its reply was lost; every script is safe to repeat (a repeat is at worst a duplicate delivery,
# which the claim drops).
REDIS_RETRIES = 3
REDIS_BACKOFF = ExponentialBackoff(cap=0.2, base=0.05)
# Connections beyond the per-shard and per-delivery ones: the heartbeat's, the recovery pass's, the
# scaler's, a submit's.
REDIS_SPARE_CONNECTIONS = 16


def redis_max_connections(settings: Settings) -> int:
    """Returns the connections one process may open (per node, on a cluster): enough for all its threads.

    The promoter blocks on each shard's wake list from a waiter thread of its own and the executor reads
    each shard's stream from a reader thread of its own, each holding a connection while it blocks, beside
    the executor's delivery threads. redis-py's default cap (100) would make the 100th such thread fail
    with "Too many connections" (seen as a Redis outage that never ends) at about 100 shards. Connections
    are opened only when needed, so a generous cap costs nothing.
    """
    return 2 * settings.shards + settings.executor_concurrency + REDIS_SPARE_CONNECTIONS


def redis_client(settings: Settings) -> redis.Redis:
    """Returns a Redis client whose socket timeout outlasts the longest blocking read.

    Connection and timeout errors are retried by the client itself (REDIS_RETRIES, REDIS_BACKOFF). With
    settings.redis_cluster it is a cluster-aware client (adapters/redis/cluster.py), which connects at its
    first command, so a cold start during an outage still starts.
    """
    options: dict[str, Any] = {
        "socket_timeout": 30,
        "socket_connect_timeout": 1,
        "health_check_interval": 30,
        "max_connections": redis_max_connections(settings),
    }
    if settings.redis_cluster:
        # The cluster client retries connection errors, CLUSTERDOWN and unmapped slots itself, reading the
        # slot map again before each try (so a fail-over's new primary is found); it takes the number of
        # tries from REDIS_RETRIES (redis-py 8 does not yet sleep REDIS_BACKOFF between them). A longer
        # outage surfaces as IndexUnavailable, which the loops back off from, as with one node. The
        # configuration endpoint stays the node the slot map is read from (dynamic_startup_nodes off):
        # ElastiCache resolves it to a live node, where the nodes' own addresses may be gone after a
        # replacement.
        return cluster_client(
            settings.redis_url,
            retry=Retry(REDIS_BACKOFF, REDIS_RETRIES),
            dynamic_startup_nodes=False,
            **options,
        )
    return redis.Redis.from_url(
        settings.redis_url,
        retry=Retry(REDIS_BACKOFF, REDIS_RETRIES),
        retry_on_error=[redis.ConnectionError, redis.TimeoutError],
        **options,
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

    def check_shards(self) -> int:
        """Records the deployment's shard count; raises ShardCountLowered when jobs were written with more.

        The promote, execute and reap functions run it before any work (start_up), so an engine deployed
        with fewer shards fails with the reason, instead of silently never running the jobs on the shards
        it dropped.
        """
        return check_shard_count(self.keys, self.settings.shards, self.clock)

    @cached_property
    def start_up(self) -> StartUpChecks:
        """The engine functions' deployment checks (shard and bucket counts), run in their first invocation.

        Not at import: a throttled or unreachable DynamoDB must not end a cold start (StartUpChecks).
        """
        return StartUpChecks([self.check_shards, self.check_buckets], self.clock, self.metrics)

    def check_buckets(self) -> Keyspace:
        """Checks the jobs table's bucket count now (see keyspace); raises JobBucketsChanged."""
        return self.keyspace

    @cached_property
    def keyspace(self) -> Keyspace:
        """Where each item of the jobs table lives, for the deployment's job bucket count.

        Built on the first use of a store of the jobs table, after checking the count against the one
        recorded (the first start records it): with another count it raises JobBucketsChanged, and again at
        every later use, instead of answering 404 for every existing job and never reconciling them. The
        engine functions check at their cold start (check_buckets); the API at its first job or schedule
        request (a 500 naming the reason).
        """
        check_bucket_count(self.keys, self.settings.job_buckets, self.clock)
        return Keyspace(self.settings.job_buckets)

    @cached_property
    def redis(self) -> redis.Redis:
        """The Redis client."""
        return redis_client(self.settings)

    @cached_property
    def engine_clock(self) -> Clock:
        """The clock of the executor, promoter and reaper: the Redis server's time (server_clock.py).

        They compare times other hosts wrote (leases, due times), so they read one reference clock and a
        host's own drift makes nothing early and takes no lease over early. A clock a test injected is
        used as it is.
        """
        if isinstance(self.clock, SystemClock):
            return RedisTimeClock(self.redis, self.clock)
        return self.clock

    @cached_property
    def dynamodb(self) -> Any:
        """The DynamoDB client (thread-safe; shared by executor threads)."""
        return dynamodb_client(self.settings, max_connections=self.settings.executor_concurrency + 10)

    @cached_property
    def index(self) -> RedisIndex:
        """The Redis live indexes; in idle mode every index call may wake a promoter (index.lua's claim)."""
        index = RedisIndex(self.redis, consumer=self.consumer, clock=self.engine_clock, metrics=self.metrics)
        try:
            wake = self.idle_policy.wake()
        except ValueError:
            # Refused loudly by the promoter (its function fails at every tick, and alarms); the API and the
            # executors go on without waking one meanwhile.
            logger.exception("idle mode's settings are refused; no promoter is woken")
            wake = None
        if wake is not None:
            index.wake_promoters_with(wake, self._wake_promoter)
        return index

    @cached_property
    def api_rate_limiter(self) -> Limiters:
        """The API's per-key request rate (Limiters.admit_api_call): a role of the Redis index."""
        return self.index

    def _wake_promoter(self, shard: int) -> None:
        # The waker is looked up at each wake, so one swapped in after the index was built is the one used.
        Wake(self.promoter_waker, self.metrics)(shard)

    @cached_property
    def idle_policy(self) -> IdlePolicy:
        """When promoters end idle: the settings' policy where a promoter can be woken
        (HOOKLINE_PROMOTE_FUNCTION, or a waker swapped in), else off (horizon 0: one runs to its deadline).
        """
        if self.settings.promote_function is None and "promoter_waker" not in self.__dict__:
            return IdlePolicy(horizon_ms=0)
        return self.settings.idle_policy()

    @cached_property
    def reaper_waker(self) -> PromoterWaker:
        """Starts a reaper: an async invoke of HOOKLINE_REAP_FUNCTION (tests swap it)."""
        return self._lambda_waker(self.settings.reap_function)

    @cached_property
    def reaper_idles(self) -> bool:
        """Whether the reaper's watch may end early: idle mode on, and a noted job can start a reaper."""
        wakeable = self.settings.reap_function is not None or "reaper_waker" in self.__dict__
        try:
            return wakeable and self.idle_policy.enabled
        except ValueError:
            return False

    @cached_property
    def promoter_waker(self) -> PromoterWaker:
        """Starts a promoter: an async invoke of HOOKLINE_PROMOTE_FUNCTION (the local stack swaps it)."""
        return self._lambda_waker(self.settings.promote_function)

    def _lambda_waker(self, function_name: str | None) -> PromoterWaker:
        """Returns a waker that invokes function_name asynchronously (its client made at the first wake),
        or one that starts nothing where no function is named."""
        if function_name is None:
            return NoWaker()
        return LambdaWaker(self._lambda_client, function_name)

    def _lambda_client(self) -> Any:
        """Returns a new Lambda client for the settings' endpoint and region (made at a first invoke)."""
        return boto3.client(
            "lambda", endpoint_url=self.settings.aws_endpoint_url, region_name=self.settings.aws_region
        )

    @cached_property
    def stats(self) -> RedisStats:
        """Per-tenant statistics (counters per minute, dead-letter set) in Redis."""
        return RedisStats(self.redis)

    @cached_property
    def dynamodb_json(self) -> DynamoJsonClient:
        """The DynamoDB JSON client over the boto3 one (thread-safe: a connection per thread)."""
        return dynamodb_json_client(self.dynamodb)

    @cached_property
    def jobs(self) -> DynamoJobStore:
        """The jobs and executions tables; the hot path (put, get, claim, finish) through the JSON client."""
        return DynamoJobStore(
            self.dynamodb_json,
            self.settings.jobs_table,
            self.settings.executions_table,
            lease_ms=self.settings.lease_ms,
            keyspace=self.keyspace,
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
    def unindexed(self) -> UnindexedLog:
        """Jobs written while Redis failed them, noted in the API keys table for the reaper; in idle mode a
        note also starts a reaper (usecases/idle.py WakingUnindexedLog)."""
        log = DynamoUnindexedLog(self.dynamodb, self.settings.api_keys_table)
        if not self.reaper_idles:
            return log
        return WakingUnindexedLog(log, self.reaper_waker, self.clock, self.metrics)

    @cached_property
    def redis_circuit(self) -> Circuit:
        """Whether the Redis steps that have a fallback ask Redis now (API rate limit, indexing, counts)."""
        return Circuit(self.clock, self.metrics)

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
            stats=CircuitStats(self.stats, self.redis_circuit),
            unindexed=self.unindexed,
            circuit=self.redis_circuit,
            queues=self.queue_store,
        )

    @cached_property
    def manager(self) -> JobManager:
        """The job administration use cases (read, list, cancel, replay)."""
        return JobManager(
            self.jobs,
            self.index,
            self.clock,
            self.metrics,
            stats=CircuitStats(self.stats, self.redis_circuit),
            unindexed=self.unindexed,
            circuit=self.redis_circuit,
        )

    @cached_property
    def promoter(self) -> Promoter:
        """The promote use case."""
        return Promoter(
            self.index,
            self.engine_clock,
            self.shards,
            self.metrics,
            self.settings.promoter_max_sleep_ms,
            cron=self.cron,
            idle=IdleWatch(self.index, self.engine_clock, self.shards, self.metrics, self.idle_policy),
        )

    @cached_property
    def schedule_store(self) -> DynamoScheduleStore:
        """Schedule items, their instances and listings in the jobs table."""
        return DynamoScheduleStore(self.dynamodb, self.settings.jobs_table, self.keyspace)

    @cached_property
    def cron(self) -> CronRunner:
        """The promoter's cron pass: fires each occurrence of every schedule once."""
        return CronRunner(
            self.schedule_store,
            self.index,
            self.submitter,
            self.engine_clock,
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
            queues=self.queue_store,
        )

    @cached_property
    def queue_store(self) -> DynamoQueueStore:
        """Named queue items in the jobs table."""
        return DynamoQueueStore(self.dynamodb, self.settings.jobs_table)

    @cached_property
    def queues(self) -> QueueManager:
        """The named queue administration use cases (API)."""
        return QueueManager(self.queue_store, self.index, self.clock, self.settings.shards, self.metrics)

    @cached_property
    def callbacks(self) -> HttpCallbackClient:
        """The outbound HTTP client (thread-safe; shared by executor threads)."""
        return HttpCallbackClient(allow_loopback=self.settings.allow_loopback)

    @cached_property
    def executor(self) -> Executor:
        """The execute use case."""
        for shard in self.shards:
            # A cold start during a Redis outage still runs: the executor's first read after Redis answers
            # again meets NOGROUP and creates the group then.
            with contextlib.suppress(IndexUnavailable):
                self.index.ensure_group(shard)
        return Executor(
            self.jobs,
            self.index,
            self.index,
            self.index,
            self.engine_clock,
            self.callbacks,
            SigningSecretProvider(self.keys, self.clock),
            self.metrics,
            self.shards,
            concurrency=self.settings.executor_concurrency,
            tenant_max_concurrency=self.settings.tenant_max_concurrency,
            tenant_rate_limit_per_s=self.settings.tenant_rate_limit_per_s,
            stats=self.stats,
            timing=self.settings.lease_timing(),
            max_deliveries=self.settings.max_deliveries,
            unindexed=self.unindexed,
            presence=self.index,
            # Ending idle only where a promoter starts executors again (the fan-out's function is named).
            idle_ms=self.settings.executor_idle_ms if self.settings.execute_function else 0,
            queues=QueueAdmission(self.index, self.queue_store, self.metrics),
        )

    @cached_property
    def reaper_dynamodb(self) -> Any:
        """The reaper's DynamoDB client: each call bounded by REAPER_DYNAMODB_BOUNDS."""
        return dynamodb_client(self.settings, max_connections=4, bounds=REAPER_DYNAMODB_BOUNDS)

    @cached_property
    def reaper(self) -> Reaper:
        """The reap use case, its stores on the reaper's DynamoDB client."""
        jobs = DynamoJobStore(
            dynamodb_json_client(self.reaper_dynamodb, REAPER_DYNAMODB_BOUNDS),
            self.settings.jobs_table,
            self.settings.executions_table,
            lease_ms=self.settings.lease_ms,
            keyspace=self.keyspace,
        )
        return Reaper(
            jobs,
            self.index,
            self.index,
            self.engine_clock,
            self.shards,
            self.metrics,
            redeliver_after_ms=self.settings.redeliver_after_ms,
            max_deliveries=self.settings.max_deliveries,
            # Its watch runs every second: re-adding at redeliver_after would race the executors' in-place
            # claims and queue a gone executor's entries behind the backlog they are meant to skip.
            readd_grace_ms=constants.READD_GRACE_MS,
            jobs=JobReconciler(
                jobs,
                self.index,
                self.index,
                self.engine_clock,
                longest_lease_ms=constants.LONGEST_ATTEMPT_MS,
                unindexed=DynamoUnindexedLog(self.reaper_dynamodb, self.settings.api_keys_table),
            ),
            schedules=ScheduleReconciler(
                DynamoScheduleStore(self.reaper_dynamodb, self.settings.jobs_table, self.keyspace),
                self.index,
                self.engine_clock,
            ),
            stats=self.stats,
            idle=IdleWatch(self.index, self.engine_clock, self.shards, self.metrics, self.idle_policy)
            if self.reaper_idles
            else None,
            presence=self.index,
            queues=QueueManager(
                DynamoQueueStore(self.reaper_dynamodb, self.settings.jobs_table),
                self.index,
                self.engine_clock,
                self.settings.shards,
                self.metrics,
            ),
        )

    @cached_property
    def executor_launcher(self) -> ExecutorLauncher:
        """Starts extra executors: async invokes of HOOKLINE_EXECUTE_FUNCTION (the local stack swaps it)."""
        name = self.settings.execute_function
        if name is None:
            return NoLauncher()
        return LambdaLauncher(self._lambda_client, name)

    @cached_property
    def fan_out(self) -> ExecutorScaler:
        """The fan-out use case: more executors while the ready streams back up."""
        policy = FanOutPolicy(
            backlog_per_executor=2 * self.settings.executor_concurrency,
            max_executors=self.settings.max_executors,
        )
        return ExecutorScaler(
            self.index,
            self.engine_clock,
            self.shards,
            self.executor_launcher,
            self.metrics,
            self.index,
            policy,
            presence=self.index,
        )

    def close(self) -> None:
        """Closes the clients this container opened (Lambda never needs this; tests and tools do)."""
        opened = self.__dict__
        if "redis" in opened:
            self.redis.close()
            if not is_cluster(self.redis):  # a cluster closes its nodes' pools itself
                self.redis.connection_pool.disconnect()
        if "dynamodb_json" in opened:
            self.dynamodb_json.close()
        if "dynamodb" in opened:
            self.dynamodb.close()
        if "reaper_dynamodb" in opened:
            self.reaper_dynamodb.close()
        if "callbacks" in opened:
            self.callbacks.close()
