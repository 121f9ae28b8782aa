"""prune_consumers.lua: deletes, in one step, the consumers holding nothing that have been idle long enough.

Idle time is real: the `old` consumers are made, then the test sleeps past IDLE_MS before the `fresh` ones
are made, so only the old ones have been idle long enough.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, cast

import pytest
import redis
from redis.cluster import RedisCluster

from hookline.adapters.redis.index import RedisIndex
from tests.integration.lua.conftest import GROUP, READY, SHARD, entry, seed
from tests.support.redis_mode import CLUSTER_MODE, disconnect

pytestmark = pytest.mark.integration

IDLE_MS = 50
IDLE_SLEEP_S = 0.1


@dataclass(frozen=True)
class Case:
    """Given consumers made long ago (`old`) and just now (`fresh`), each holding n entries; when pruned."""

    want_removed: int
    want_left: dict[str, int]
    old: dict[str, int] = field(default_factory=dict)
    fresh: dict[str, int] = field(default_factory=dict)


def _make(client: redis.Redis, consumers: dict[str, int]) -> None:
    for name, holding in consumers.items():
        client.xgroup_createconsumer(READY, GROUP, name)
        if holding:
            seed(client, ready=[entry(f"t/{name}{i}/1") for i in range(holding)])
            client.xreadgroup(GROUP, name, {READY: ">"}, count=holding)


def _consumers(client: redis.Redis) -> dict[str, int]:
    return {row["name"].decode(): int(row["pending"]) for row in client.xinfo_consumers(READY, GROUP)}


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(Case(old={"gone": 0}, want_removed=1, want_left={}), id="given_idle_empty_then_deleted"),
        pytest.param(
            Case(old={"crashed": 2}, want_removed=0, want_left={"crashed": 2}),
            id="given_idle_consumer_holding_entries_then_kept_for_redelivery",
        ),
        pytest.param(
            Case(fresh={"reading": 0}, want_removed=0, want_left={"reading": 0}),
            id="given_recently_active_empty_consumer_then_kept",
        ),
        pytest.param(
            Case(
                old={"gone1": 0, "gone2": 0, "crashed": 1},
                fresh={"reading": 0, "busy": 1},
                want_removed=2,
                want_left={"crashed": 1, "reading": 0, "busy": 1},
            ),
            id="given_a_mix_then_only_idle_empty_ones_deleted",
        ),
        pytest.param(Case(want_removed=0, want_left={}), id="given_no_consumers_then_nothing_deleted"),
    ],
)
def test_prune_consumers(redis_client: redis.Redis, redis_index: RedisIndex, case: Case) -> None:
    _make(redis_client, case.old)
    if case.old:
        time.sleep(IDLE_SLEEP_S)
    _make(redis_client, case.fresh)

    removed = redis_index.prune_consumers(SHARD, idle_ms=IDLE_MS)

    assert removed == case.want_removed
    assert _consumers(redis_client) == case.want_left


def test_given_no_stream_or_no_group_when_pruned_then_nothing_happens(redis_client: redis.Redis) -> None:
    index = RedisIndex(redis_client)

    assert index.prune_consumers(SHARD, idle_ms=0) == 0
    redis_client.xadd(READY, entry("t/a/1"))  # a stream without the group
    assert index.prune_consumers(SHARD, idle_ms=0) == 0
    assert redis_client.exists(READY) == 1


class WakingClient(redis.Redis):
    """A client after whose XINFO CONSUMERS the idle consumer "waking" reads an entry, as an executor may."""

    def xinfo_consumers(self, name: Any, groupname: Any) -> Any:
        consumers = super().xinfo_consumers(name, groupname)
        self.xreadgroup(GROUP, "waking", {READY: ">"})
        return consumers


class WakingCluster(RedisCluster):
    """WakingClient for the cluster run."""

    def xinfo_consumers(self, name: Any, groupname: Any) -> Any:
        consumers = super().xinfo_consumers(name, groupname)
        self.xreadgroup(GROUP, "waking", {READY: ">"})
        return consumers


def test_given_idle_consumer_waking_between_check_and_delete_when_pruned_then_its_entry_stays_pending(
    redis_client: redis.Redis, redis_index: RedisIndex, redis_url: str
) -> None:
    _make(redis_client, {"waking": 0})
    time.sleep(IDLE_SLEEP_S)
    seed(redis_client, ready=[entry("t/a/1")])
    waking: redis.Redis
    if CLUSTER_MODE:
        waking = cast(redis.Redis, WakingCluster.from_url(redis_url))
    else:
        waking = WakingClient(connection_pool=redis_client.connection_pool)
    index = RedisIndex(waking)

    index.prune_consumers(SHARD, idle_ms=IDLE_MS)
    redis_client.xreadgroup(GROUP, "waking", {READY: ">"})  # the read happens now if it did not before
    if CLUSTER_MODE:
        disconnect(waking)

    # Deleting "waking" after it read would drop the entry from the pending list: never re-delivered.
    assert redis_client.xpending(READY, GROUP)["pending"] == 1
    assert _consumers(redis_client) == {"waking": 1}
