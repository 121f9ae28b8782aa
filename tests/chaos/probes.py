"""What Redis holds right now, read by the fault suite to time and size its faults."""

from __future__ import annotations

import time

from hookline.adapters.redis import keys as redis_keys
from hookline.domain.models import Job, Member
from tests.chaos.fleet import Slot, consumer_pid
from tests.chaos.world import World


def pending_of(world: World, pid: int) -> list[Member]:
    """Returns the members of the ready-stream entries pending for the executor process pid."""
    client = world.redis.client()
    try:
        stream = redis_keys.ready_stream(0)
        names = [c["name"] for c in client.xinfo_consumers(stream, redis_keys.CONSUMER_GROUP)]
        members = []
        for name in (n for n in names if consumer_pid(n) == pid):
            pending = client.xpending_range(stream, redis_keys.CONSUMER_GROUP, "-", "+", 100_000, name)
            for entry in pending:
                for _, fields in client.xrange(stream, entry["message_id"], entry["message_id"]):
                    members.append(Member.decode(fields[b"m"].decode()))
        return members
    finally:
        client.close()


def pending_total(world: World) -> int:
    """Returns how many ready-stream entries are pending (read by an executor, not acknowledged)."""
    client = world.redis.client()
    try:
        return int(client.xpending(redis_keys.ready_stream(0), redis_keys.CONSUMER_GROUP)["pending"])
    except Exception:
        return 0
    finally:
        client.close()


def redis_holds(world: World, job: Job) -> str:
    """Says where Redis holds the job's current member (due ZSET, in-flight ZSET) or that it does not."""
    client = world.redis.client()
    try:
        member = job.member().encode()
        due = client.zscore(redis_keys.due_key(job.shard), member)
        inflight = client.zscore(redis_keys.inflight_key(job.shard), member)
    except Exception as error:
        return f"unreadable ({type(error).__name__})"
    finally:
        client.close()
    if due is None and inflight is None:
        return "nowhere"
    return f"due {due}, in flight since {inflight}"


def busiest_executor(world: World, wait_s: float = 15.0, busy_within_s: float = 3.0) -> Slot:
    """Returns the running execute slot with the most pending entries.

    Waits up to wait_s for an executor to run at all, and then up to busy_within_s for one to hold
    work, so that a kill lands on deliveries in flight rather than on an idle moment.
    """
    end = time.monotonic() + wait_s
    busy_end: float | None = None
    while True:
        live = [slot for slot in world.fleet.executors() if slot.child is not None and slot.child.alive()]
        if live:
            held = {slot.name: len(pending_of(world, slot.child.pid)) for slot in live if slot.child}
            busy_end = busy_end or time.monotonic() + busy_within_s
            if max(held.values()) > 0 or time.monotonic() > busy_end:
                return max(live, key=lambda slot: held[slot.name])
        if time.monotonic() > end:
            raise AssertionError("no executor is running")
        world.sleep(0.05)
