"""Runtime settings, read from the environment that template.yaml (or the local stack) sets."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from hookline.adapters.dynamo.tables import DEFAULT_JOB_BUCKETS
from hookline.domain import constants
from hookline.domain.idle import IdlePolicy
from hookline.domain.leases import LeaseTiming


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


def _optional_int(value: str | None) -> int | None:
    return int(value) if value else None


@dataclass(frozen=True)
class Settings:
    """Endpoints, names and tunables of one deployment."""

    redis_url: str = "redis://127.0.0.1:6379/0"
    # True when redis_url names a Redis Cluster (one of its nodes, or ElastiCache's configuration
    # endpoint): a cluster-aware client then routes each command to the node serving its key's slot.
    redis_cluster: bool = False
    jobs_table: str = "hookline-jobs"
    executions_table: str = "hookline-executions"
    api_keys_table: str = "hookline-api-keys"
    aws_endpoint_url: str | None = None
    aws_region: str = "us-east-1"
    shards: int = 1
    # A tenant's jobs spread over this many DynamoDB partition keys, and a shard's live index over as many
    # (adapters/dynamo/tables.py Keyspace). Fixed per deployment: recorded at the first start, and the
    # engine refuses another count (`hookline migrate-keys` moves the items to a new count).
    job_buckets: int = DEFAULT_JOB_BUCKETS
    allow_loopback: bool = False
    executor_concurrency: int = 32
    # Leases, heartbeats and recovery (hookline.domain.leases.LeaseTiming checks the invariants between them).
    # A pending entry idle this long is re-delivered (by every executor each recover_every_ms, and by the
    # reaper); executors beat their entries every heartbeat_ms, so only a gone executor's entries go idle.
    redeliver_after_ms: int = constants.REDELIVER_AFTER_MS
    max_deliveries: int = 5
    # A claim holds its job for lease_ms, renewed by the heartbeat once less than lease_renew_below_ms (by
    # default half the lease) is left; only after it expires may another executor take the job over. A
    # callback ends (or does not start) lease_margin_ms before the lease it holds expires.
    lease_ms: int = constants.LEASE_MS
    lease_margin_ms: int = int(constants.LEASE_MARGIN_S * 1000)
    lease_renew_below_ms: int | None = None
    heartbeat_ms: int = constants.HEARTBEAT_MS
    recover_every_ms: int = constants.RECOVER_EVERY_MS
    promoter_max_sleep_ms: int = constants.PROMOTER_MAX_SLEEP_MS
    tenant_max_concurrency: int | None = None
    # API requests per second per API key, unless the key record sets its own `rate_limit_per_s`.
    api_rate_limit_per_s: int = 100
    tenant_rate_limit_per_s: int | None = None
    # The function the promoter invokes to fan out executors; None starts no extra executors.
    execute_function: str | None = None
    # The most fanned-out executors running at once, over every promoter (0: one at most, started when the
    # streams hold work and none runs).
    max_executors: int = constants.FAN_OUT_MAX_EXECUTORS
    # Idle mode (hookline.domain.idle): a promoter ends once nothing falls due within idle_horizon_ms and
    # the streams stayed empty for idle_grace_ms (horizon 0: it runs to its deadline); an index call of a
    # member due within the horizon while none runs invokes promote_function (None: none is woken, so keep
    # the horizon 0); an executor ends after executor_idle_ms without work (0: at its deadline).
    idle_horizon_ms: int = IdlePolicy.horizon_ms
    idle_grace_ms: int = IdlePolicy.grace_ms
    executor_idle_ms: int = constants.EXECUTOR_IDLE_MS
    promote_function: str | None = None
    # The reap function a writer that noted a job (Redis failed its index write) invokes, so an idle reaper
    # (its watch ended early) does not leave the note to the next tick; None: the watch never ends early.
    reap_function: str | None = None
    # Cron: the shortest gap between two occurrences of a schedule (1000 ms: cron's own limit, so no floor),
    # per-tenant overrides as "tenant=ms,tenant=ms", and how late an occurrence may fire before it counts
    # as missed (then the schedule's catch-up policy applies). Keep the grace above the claim expiry
    # (usecases/cron.py CLAIM_TTL_MS) so a crashed promoter's occurrences still fire.
    cron_min_interval_ms: int = 1000
    cron_tenant_min_interval_ms: str = ""
    cron_misfire_grace_ms: int = 30_000

    def lease_timing(self) -> LeaseTiming:
        """Returns the lease, heartbeat and recovery timings; ValueError when they break an invariant."""
        return LeaseTiming(
            lease_ms=self.lease_ms,
            margin_ms=self.lease_margin_ms,
            renew_below_ms=self.lease_renew_below_ms or self.lease_ms // 2,
            heartbeat_ms=self.heartbeat_ms,
            redeliver_after_ms=self.redeliver_after_ms,
            recover_every_ms=self.recover_every_ms,
        )

    def idle_policy(self) -> IdlePolicy:
        """Returns the promoter's idle policy; ValueError when the horizon is not above the schedule."""
        # The heartbeat outlasts three sweeps (a promoter visits every shard each longest sleep) and a tick.
        return IdlePolicy(
            horizon_ms=self.idle_horizon_ms,
            grace_ms=self.idle_grace_ms,
            alive_ms=3 * self.promoter_max_sleep_ms + 2_000,
        )

    def cron_tenant_floors_ms(self) -> dict[str, int]:
        """Returns the per-tenant frequency floors parsed from "tenant=ms,tenant=ms"."""
        floors: dict[str, int] = {}
        for pair in filter(None, (part.strip() for part in self.cron_tenant_min_interval_ms.split(","))):
            tenant, _, value = pair.partition("=")
            floors[tenant.strip()] = int(value)
        return floors

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Builds settings from HOOKLINE_* variables, falling back to the defaults above."""
        env = os.environ if env is None else env
        default = cls()
        return cls(
            redis_url=env.get("HOOKLINE_REDIS_URL", default.redis_url),
            redis_cluster=_flag(env.get("HOOKLINE_REDIS_CLUSTER")),
            jobs_table=env.get("HOOKLINE_JOBS_TABLE", default.jobs_table),
            executions_table=env.get("HOOKLINE_EXECUTIONS_TABLE", default.executions_table),
            api_keys_table=env.get("HOOKLINE_API_KEYS_TABLE", default.api_keys_table),
            aws_endpoint_url=env.get("HOOKLINE_AWS_ENDPOINT") or None,
            aws_region=env.get("AWS_REGION", env.get("AWS_DEFAULT_REGION", default.aws_region)),
            shards=int(env.get("HOOKLINE_SHARDS", default.shards)),
            job_buckets=int(env.get("HOOKLINE_JOB_BUCKETS", default.job_buckets)),
            allow_loopback=_flag(env.get("HOOKLINE_ALLOW_LOOPBACK")),
            executor_concurrency=int(env.get("HOOKLINE_EXECUTOR_CONCURRENCY", default.executor_concurrency)),
            redeliver_after_ms=int(env.get("HOOKLINE_REDELIVER_AFTER_MS", default.redeliver_after_ms)),
            max_deliveries=int(env.get("HOOKLINE_MAX_DELIVERIES", default.max_deliveries)),
            lease_ms=int(env.get("HOOKLINE_LEASE_MS", default.lease_ms)),
            lease_margin_ms=int(env.get("HOOKLINE_LEASE_MARGIN_MS", default.lease_margin_ms)),
            lease_renew_below_ms=_optional_int(env.get("HOOKLINE_LEASE_RENEW_BELOW_MS")),
            heartbeat_ms=int(env.get("HOOKLINE_HEARTBEAT_MS", default.heartbeat_ms)),
            recover_every_ms=int(env.get("HOOKLINE_RECOVER_EVERY_MS", default.recover_every_ms)),
            promoter_max_sleep_ms=int(
                env.get("HOOKLINE_PROMOTER_MAX_SLEEP_MS", default.promoter_max_sleep_ms)
            ),
            tenant_max_concurrency=_optional_int(env.get("HOOKLINE_TENANT_MAX_CONCURRENCY")),
            api_rate_limit_per_s=int(env.get("HOOKLINE_API_RATE_LIMIT_PER_S", default.api_rate_limit_per_s)),
            tenant_rate_limit_per_s=_optional_int(env.get("HOOKLINE_TENANT_RATE_LIMIT_PER_S")),
            execute_function=env.get("HOOKLINE_EXECUTE_FUNCTION") or None,
            max_executors=int(env.get("HOOKLINE_MAX_EXECUTORS") or default.max_executors),
            idle_horizon_ms=int(env.get("HOOKLINE_IDLE_HORIZON_MS") or default.idle_horizon_ms),
            idle_grace_ms=int(env.get("HOOKLINE_IDLE_GRACE_MS") or default.idle_grace_ms),
            executor_idle_ms=int(env.get("HOOKLINE_EXECUTOR_IDLE_MS") or default.executor_idle_ms),
            promote_function=env.get("HOOKLINE_PROMOTE_FUNCTION") or None,
            reap_function=env.get("HOOKLINE_REAP_FUNCTION") or None,
            cron_min_interval_ms=int(env.get("HOOKLINE_CRON_MIN_INTERVAL_MS", default.cron_min_interval_ms)),
            cron_tenant_min_interval_ms=env.get("HOOKLINE_CRON_TENANT_MIN_INTERVAL_MS", ""),
            cron_misfire_grace_ms=int(
                env.get("HOOKLINE_CRON_MISFIRE_GRACE_MS", default.cron_misfire_grace_ms)
            ),
        )
