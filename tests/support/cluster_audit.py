"""Watches a test's Redis Cluster traffic for commands that span slots, on both sides of the wire.

redis-py's cluster client refuses a command whose keys map to several slots before sending it (a
RedisClusterException the engine may swallow: a submit's index step, an executor's delivery); a one-node
client pointed at a cluster gets CROSSSLOT, MOVED or ASK from the server, counted in INFO errorstats.
SlotAudit records the first kind as it happens and reads the second from every node, so a test can
assert that neither occurred.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from redis.cluster import RedisCluster
from redis.exceptions import RedisClusterException

from hookline.adapters.redis.cluster import is_cluster

# Replies a cluster answers a command that names keys of other nodes or of several slots with.
SLOT_ERRORS = ("CROSSSLOT", "MOVED", "ASK")


def slot_errors(client: RedisCluster) -> dict[str, int]:
    """Returns, summed over every primary, how many CROSSSLOT, MOVED and ASK replies the cluster sent."""
    totals = dict.fromkeys(SLOT_ERRORS, 0)
    for node in client.get_primaries():
        stats = client.info("errorstats", target_nodes=node)
        for code in SLOT_ERRORS:
            totals[code] += int(stats.get(f"errorstat_{code}", {}).get("count", 0))
    return totals


class SlotAudit:
    """Counts cross-slot commands the cluster client refused and slot errors the nodes replied."""

    def __init__(self, client: RedisCluster) -> None:
        self.client = client
        self.refused: list[str] = []
        self._before = slot_errors(client)

    def server_errors(self) -> dict[str, int]:
        """Returns the slot errors the nodes replied since the audit began."""
        after = slot_errors(self.client)
        return {code: after[code] - self._before[code] for code in SLOT_ERRORS}


@contextmanager
def auditing(client: RedisCluster) -> Iterator[SlotAudit]:
    """Yields a SlotAudit over the block; every RedisCluster (and pipeline) reports refusals to it."""
    audit = SlotAudit(client)
    original = RedisCluster.determine_slot

    def determine_slot(self: RedisCluster, *args: Any) -> Any:
        try:
            return original(self, *args)
        except RedisClusterException as error:
            audit.refused.append(f"{error} ({' '.join(map(str, args[:3]))} ...)")
            raise

    RedisCluster.determine_slot = determine_slot  # type: ignore[method-assign]
    try:
        yield audit
    finally:
        RedisCluster.determine_slot = original  # type: ignore[method-assign]


def key_lookups(client: Any) -> int:
    """Returns how many COMMAND GETKEYS the Redis (every primary of a cluster) has answered.

    redis-py's cluster client sends one to find the keys of a command whose key positions vary (such as
    XREADGROUP) unless told; each is a round trip to one node, so the engine must not cause any.
    """
    if is_cluster(client):
        infos = [client.info("commandstats", target_nodes=node) for node in client.get_primaries()]
    else:
        infos = [client.info("commandstats")]
    return sum(int(info.get("cmdstat_command|getkeys", {}).get("calls", 0)) for info in infos)
