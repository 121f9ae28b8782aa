"""The contract suite's backends: every port once as its fake (tests/fakes) and once as its real adapter.

Each test takes `redis_backend` or `dynamo_backend` and runs twice, against the fake and against the real
adapter (a real redis-server, moto's server), asserting the same observable results; so a fake that drifts
from its adapter fails here. Redis state is read through one probe interface, by the real key names: the fake
memory implements it, and RealRedisProbe reads the server.

Time: the Redis roles take now_ms as an argument, but Redis reads its own clock for stream ids, idle times and
expiry. `elapse(ms)` lets that much of that clock pass: it advances the fake's FrozenClock, and sleeps for the
real server (only a few tests need it, for idle times of tens of milliseconds). The times a role writes itself
(a malformed entry's dead-letter time, a release's hold time) come from the backend's `clock`, the process's,
a FrozenClock at NOW for both backends; what a role counts goes to the backend's `metrics`.

DynamoDB: one set of tables on the session's moto server (no per-test reset, which costs a second or more);
each test works in a tenant and a shard of its own. Transactions can be cancelled on purpose with a reason
code (DynamoBackend.transactions.plan), and a write's reply can be lost (DynamoBackend.replies.lose): the
write is applied, and the client's own retry sends it again. The real clients reach moto through
tests/support/dynamo_faults' proxy, which answers the planned cancellations on the wire as DynamoDB would and
loses a planned reply by resetting the connection once the write was applied; the fake has its own
TransactionCancellations and LostReplies. The adapter's retries between cancellations do not sleep.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import pytest
import redis

from hookline.adapters.dynamo.job_store import DynamoJobStore
from hookline.adapters.dynamo.key_store import DynamoKeyStore
from hookline.adapters.dynamo.queue_store import DynamoQueueStore
from hookline.adapters.dynamo.schedule_store import DynamoScheduleStore
from hookline.adapters.dynamo.transactions import Transactions
from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.index import RedisIndex
from hookline.domain.keys import KeyRecord
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import dynamodb_client, dynamodb_json_client
from hookline.ports import (
    CronIndex,
    DueIndex,
    ExecutorLedger,
    JobAdminStore,
    JobBucketRecord,
    JobStore,
    KeyReader,
    Limiters,
    QueueGate,
    QueueStore,
    ReadyStream,
    RebuildMarkStore,
    ScheduleAdminStore,
    ScheduleStore,
    ShardCountRecord,
)
from tests.fakes.clock import FrozenClock
from tests.fakes.index import FakeIndex
from tests.fakes.jobs import FakeJobStore
from tests.fakes.keys import FakeKeyStore
from tests.fakes.metrics import RecordingMetrics
from tests.fakes.queue_store import FakeQueueStore
from tests.fakes.redis_memory import RedisMemory
from tests.fakes.schedules import FakeScheduleStore
from tests.fakes.tables import JobsTables
from tests.support.aws import Boto3WithBudget, make_tables
from tests.support.dynamo_faults import DynamoFaultProxy

GROUP = redis_keys.CONSUMER_GROUP
EXECUTOR, REAPER = "executor", "reaper"
LEASE_MS = 2_000
# The process clock of the Redis roles (see the module docstring), the same in both backends.
ROLE_CLOCK_MS = 10_000
BACKENDS = ["fake", pytest.param("real", marks=pytest.mark.integration)]


class RedisRoles(
    DueIndex, ReadyStream, Limiters, QueueGate, CronIndex, RebuildMarkStore, ExecutorLedger, Protocol
):
    """Every Redis role over one connection, as RedisIndex and FakeIndex play them."""


class RedisProbe(Protocol):
    """Reads (and seeds) Redis keys by their real names."""

    def zset(self, key: str) -> dict[str, float]:
        """Returns member -> score."""
        ...

    def stream(self, key: str) -> list[tuple[str, dict[str, str]]]:
        """Returns (id, fields), oldest first."""
        ...

    def pending(self, key: str, group: str) -> list[tuple[str, str, int]]:
        """Returns (entry id, consumer, times delivered) in id order."""
        ...

    def list_length(self, key: str) -> int:
        """Returns a list's length."""
        ...

    def hash(self, key: str) -> dict[str, str]:
        """Returns a hash's fields."""
        ...

    def consumers(self, key: str, group: str) -> dict[str, int]:
        """Returns each consumer's count of pending entries."""
        ...

    def add_entry(self, key: str, fields: dict[str, str]) -> str:
        """XADDs raw fields; returns the id."""
        ...

    def delete_entry(self, key: str, entry_id: str) -> None:
        """XDELs an entry."""
        ...

    def string(self, key: str) -> str | None:
        """Returns a string key's value."""
        ...

    def pttl(self, key: str) -> int:
        """Returns the key's remaining life in ms, -1 without expiry, -2 when missing (PTTL)."""
        ...

    def read_raw(self, key: str, group: str, consumer: str) -> list[str]:
        """XREADGROUPs every new entry for consumer without decoding (an executor that died right after
        its read); returns their ids."""
        ...

    def flush(self) -> None:
        """Loses every key (FLUSHALL)."""
        ...


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RealRedisProbe:
    """The probe over a real Redis client."""

    def __init__(self, client: redis.Redis) -> None:
        # The client's replies are loosely typed (bytes, str, optional): read them as Any and convert.
        self._client: Any = client

    def zset(self, key: str) -> dict[str, float]:
        """Returns member -> score."""
        return {_text(m): float(s) for m, s in self._client.zrange(key, 0, -1, withscores=True)}

    def stream(self, key: str) -> list[tuple[str, dict[str, str]]]:
        """Returns (id, fields), oldest first."""
        return [
            (_text(i), {_text(k): _text(v) for k, v in fields.items()})
            for i, fields in self._client.xrange(key)
        ]

    def pending(self, key: str, group: str) -> list[tuple[str, str, int]]:
        """Returns (entry id, consumer, times delivered) in id order."""
        if not self._client.exists(key) or not any(
            _text(g["name"]) == group for g in self._client.xinfo_groups(key)
        ):
            return []
        rows = self._client.xpending_range(key, group, min="-", max="+", count=10_000)
        return [(_text(r["message_id"]), _text(r["consumer"]), int(r["times_delivered"])) for r in rows]

    def list_length(self, key: str) -> int:
        """Returns a list's length."""
        return int(self._client.llen(key))

    def hash(self, key: str) -> dict[str, str]:
        """Returns a hash's fields."""
        return {_text(k): _text(v) for k, v in self._client.hgetall(key).items()}

    def consumers(self, key: str, group: str) -> dict[str, int]:
        """Returns each consumer's count of pending entries."""
        return {_text(c["name"]): int(c["pending"]) for c in self._client.xinfo_consumers(key, group)}

    def add_entry(self, key: str, fields: dict[str, str]) -> str:
        """XADDs raw fields; returns the id."""
        return _text(self._client.xadd(key, fields))

    def delete_entry(self, key: str, entry_id: str) -> None:
        """XDELs an entry."""
        self._client.xdel(key, entry_id)

    def string(self, key: str) -> str | None:
        """Returns a string key's value."""
        value = self._client.get(key)
        return None if value is None else _text(value)

    def pttl(self, key: str) -> int:
        """Returns the key's remaining life in ms, -1 without expiry, -2 when missing (PTTL)."""
        return int(self._client.pttl(key))

    def flush(self) -> None:
        """Loses every key (FLUSHALL)."""
        self._client.flushall()

    def read_raw(self, key: str, group: str, consumer: str) -> list[str]:
        """XREADGROUPs every new entry for consumer without decoding; returns their ids."""
        reply = self._client.xreadgroup(group, consumer, {key: ">"}, count=10_000)
        return [_text(entry_id) for _, messages in reply or [] for entry_id, _ in messages]


@dataclass
class RedisBackend:
    """One Redis (fake or real): role objects per consumer, a probe, and a way to let Redis's time pass."""

    name: str
    roles: Callable[[str], RedisRoles]
    probe: RedisProbe
    elapse: Callable[[int], None]
    clock: FrozenClock
    metrics: RecordingMetrics

    @property
    def executor(self) -> RedisRoles:
        """Returns the roles as the executor consumer."""
        return self.roles(EXECUTOR)

    @property
    def reaper(self) -> RedisRoles:
        """Returns the roles as the reaper consumer."""
        return self.roles(REAPER)

    def state(self, shard: int = 0) -> dict[str, Any]:
        """Reads a shard's keys: due, ready (fields), pending (member, consumer, deliveries), inflight,
        wake (tokens), dead (fields)."""
        p = self.probe
        ready = p.stream(redis_keys.ready_stream(shard))
        member_of = {entry_id: fields.get("m", "?") for entry_id, fields in ready}
        return {
            "due": p.zset(redis_keys.due_key(shard)),
            "ready": [fields for _, fields in ready],
            "pending": [
                (member_of.get(entry_id, f"<deleted {entry_id}>"), consumer, count)
                for entry_id, consumer, count in p.pending(redis_keys.ready_stream(shard), GROUP)
            ],
            "inflight": p.zset(redis_keys.inflight_key(shard)),
            "wake": p.list_length(redis_keys.wake_key(shard)),
            "dead": [fields for _, fields in p.stream(redis_keys.dead_stream(shard))],
        }


def wall_ms() -> int:
    """Returns the wall clock in ms (the fake's clock starts there, so ids look like the server's)."""
    return time.time_ns() // 1_000_000


@pytest.fixture(params=BACKENDS)
def redis_backend(request: pytest.FixtureRequest) -> RedisBackend:
    """Yields the fake Redis, then a real redis-server (flushed)."""
    clock, metrics = FrozenClock(ROLE_CLOCK_MS), RecordingMetrics()
    if request.param == "fake":
        redis_clock = FrozenClock(wall_ms())
        memory = RedisMemory(redis_clock)
        return RedisBackend(
            "fake",
            lambda consumer: FakeIndex(memory, consumer, clock=clock, metrics=metrics),
            memory,
            redis_clock.advance,
            clock,
            metrics,
        )
    client: redis.Redis = request.getfixturevalue("redis_client")
    return RedisBackend(
        "real",
        lambda consumer: RedisIndex(client, consumer=consumer, clock=clock, metrics=metrics),
        RealRedisProbe(client),
        lambda ms: time.sleep(ms / 1000),
        clock,
        metrics,
    )


class JobStores(JobStore, JobAdminStore, Protocol):
    """The job store in both roles, as DynamoJobStore and FakeJobStore play them."""


class ScheduleStores(ScheduleStore, ScheduleAdminStore, Protocol):
    """The schedule store in both roles."""


class TransactionFaults(Protocol):
    """Cancels the backend's next DynamoDB transactions with a reason code."""

    remaining: int
    cancelled: int

    def plan(self, reason: str, count: int = 1, at: int = -1) -> None:
        """Cancels the next count transactions with reason at item index at (-1: the last item)."""
        ...


class ReplyFaults(Protocol):
    """Loses the replies of the backend's next DynamoDB writes: applied, then sent again by the client."""

    lost: int

    def lose(self, operation: str, count: int = 1, between: Callable[[], object] | None = None) -> None:
        """Loses the reply of the next count requests of operation (put_item, update_item, ...), running
        between() before each repeat."""
        ...


class KeyStore(KeyReader, ShardCountRecord, JobBucketRecord, Protocol):
    """The key reader, the shard and bucket count records, and the writer of key records tests need."""

    def put_key(self, record: KeyRecord) -> None:
        """Stores a key record."""
        ...


# Shards handed out in this session; the contract tables are the session's own, so no other run shares them.
_UNUSED_SHARDS = itertools.count(1_000)


def unused_shards(count: int = 1) -> list[int]:
    """Returns `count` consecutive shards no other test of the session was given.

    Drawn from a counter, never at random: two tests on one shard would see each other's live jobs.
    """
    first = next(_UNUSED_SHARDS)
    for _ in range(count - 1):
        next(_UNUSED_SHARDS)
    return list(range(first, first + count))


@dataclass
class DynamoBackend:
    """The stores of one jobs table (fake or moto), and a tenant and a shard no other test uses."""

    name: str
    jobs: JobStores
    schedules: ScheduleStores
    keys: KeyStore
    tenant: str
    shard: int
    transactions: TransactionFaults
    replies: ReplyFaults
    queues: QueueStore = field(default_factory=FakeQueueStore)


@pytest.fixture(scope="session")
def contract_tables(dynamo_proxy: DynamoFaultProxy) -> Iterator[tuple[Settings, Any]]:
    """Creates one set of tables on moto for the contract suite; yields their settings and a client.

    The settings and the client reach moto through the fault proxy (dynamo_proxy).

    Creating tables costs seconds on a loaded machine, so they are made once. The `settings` fixture of the
    integration tests resets moto, dropping them; the contract tests run together (one directory), after
    or before those, never between them.
    """
    suffix = uuid.uuid4().hex[:8]
    settings = Settings(
        redis_url="redis://127.0.0.1:1/0",  # unused: the Redis contract has its own backend
        jobs_table=f"contract-jobs-{suffix}",
        executions_table=f"contract-executions-{suffix}",
        api_keys_table=f"contract-api-keys-{suffix}",
        aws_endpoint_url=dynamo_proxy.url,
    )
    make_tables(settings)
    client = dynamodb_client(settings)
    yield settings, client
    client.close()


# "json-client": the DynamoDB adapters over the engine's JSON client (adapters/dynamo/json_client.py).
DYNAMO_BACKENDS = [*BACKENDS, pytest.param("json-client", marks=pytest.mark.integration)]


@pytest.fixture(params=DYNAMO_BACKENDS)
def dynamo_backend(request: pytest.FixtureRequest) -> Iterator[DynamoBackend]:
    """Yields the fake stores, then the DynamoDB adapters on moto, for a fresh tenant and shard."""
    tenant = f"t{uuid.uuid4().hex[:10]}"
    (shard,) = unused_shards()
    if request.param == "fake":
        tables = JobsTables()
        jobs = FakeJobStore(tables, lease_ms=LEASE_MS)
        yield DynamoBackend(
            "fake",
            jobs,
            FakeScheduleStore(tables),
            FakeKeyStore(),
            tenant,
            shard,
            jobs.transactions,
            jobs.replies,
        )
        return
    settings, client = request.getfixturevalue("contract_tables")
    faults: DynamoFaultProxy = request.getfixturevalue("dynamo_faults")
    lean = dynamodb_json_client(client) if request.param == "json-client" else None
    client = lean or client
    yield DynamoBackend(
        "real",
        DynamoJobStore(
            lean or Boto3WithBudget(client),
            settings.jobs_table,
            settings.executions_table,
            lease_ms=LEASE_MS,
            transactions=Transactions(client, sleep=lambda seconds: None),
        ),
        DynamoScheduleStore(client, settings.jobs_table),
        DynamoKeyStore(client, settings.api_keys_table),
        tenant,
        shard,
        faults.transactions,
        faults.replies,
        queues=DynamoQueueStore(client, settings.jobs_table),
    )
    if lean is not None:
        lean.close()
