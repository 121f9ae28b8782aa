"""Reading one logical range that is spread over several partition keys (Keyspace buckets).

Two readers, shared by the DynamoDB adapter and the fake job store so both page the same way:

- merge_newest_first: a tenant's jobs, newest first, over its bucket partitions. Job ids are unique and
  time-ordered across buckets, so one position (a job id) says where a page ended in every bucket at once:
  the next page is every job with a smaller id. The API's cursor stays one job id.
- scan_partitions: one step of a scan over several partitions in no particular order between them (the
  live index of a shard), with a cursor that keeps each partition's own position.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

T = TypeVar("T")

CURSOR_VERSION = 2


@dataclass(frozen=True)
class BucketPage(Generic[T]):
    """What one query of one bucket gave: matching items in order, where it stopped, how many it read.

    last_position is the position of the last item the query evaluated (matching a filter or not), or None
    when the bucket has nothing after this page.
    """

    items: list[T]
    last_position: str | None
    read: int


# fetch(bucket, after_position (None: from the newest), limit) -> BucketPage
BucketFetch = Callable[[int, str | None, int], BucketPage[T]]


@dataclass
class _Bucket(Generic[T]):
    position: str | None
    buffer: deque[T] = field(default_factory=deque)
    done: bool = False


def merge_newest_first(
    buckets: int,
    fetch: BucketFetch[T],
    position_of: Callable[[T], str],
    after: str | None,
    limit: int,
    batch: int | None,
    max_read: int,
) -> tuple[list[T], str | None]:
    """Returns up to limit items of every bucket, greatest position first, and the position to go on after.

    Each bucket is queried after `after`, in pages of `batch` items (None: as many as the page still needs,
    spread over the buckets). An item is taken only once every bucket that may still hold a greater one has
    been read past it, so the merge is exact. Reading stops once `max_read` items were read; the position
    returned then is the highest a bucket has not been read past (everything above it was read), so a short
    page can still have a continuation, as with one partition and a filter. None: nothing follows.
    """
    need = limit + 1  # one more than the page tells whether another page exists
    states = [_Bucket[T](after) for _ in range(buckets)]
    taken: list[T] = []
    read = 0
    while True:
        while len(taken) < need:
            heads = [state for state in states if state.buffer]
            if not heads:
                break
            top = max(heads, key=lambda state: position_of(state.buffer[0]))
            head = position_of(top.buffer[0])
            # A bucket not read down to head may still hold something greater.
            if any(_may_hold_above(state, head) for state in states):
                break
            taken.append(top.buffer.popleft())
        if len(taken) >= need:
            return taken[:limit], position_of(taken[limit - 1])
        waiting = [
            (index, state) for index, state in enumerate(states) if not state.done and not state.buffer
        ]
        if not waiting:
            return taken, None
        if read >= max_read:
            # Every item above the highest waiting position was read and taken (a buffered one is below it).
            return taken, max((s.position for _, s in waiting if s.position is not None), default=None)
        size = batch or max(1, -(-(need - len(taken)) // buckets) + 1)
        for index, state in waiting:
            page = fetch(index, state.position, size)
            read += page.read
            state.buffer.extend(page.items)
            if page.last_position is None:
                state.done = True
            else:
                state.position = page.last_position


def _may_hold_above(state: _Bucket[Any], position: str) -> bool:
    return not state.done and not state.buffer and (state.position is None or state.position > position)


# fetch(partition, start_key (None: from its start), limit) -> (items, the key to go on from or None)
PartitionFetch = Callable[[str, Any, int], tuple[list[T], Any]]


def scan_partitions(
    partitions: list[str], fetch: PartitionFetch[T], cursor: str | None, limit: int
) -> tuple[list[T], str | None]:
    """Reads the next page of a scan over partitions; returns it and the cursor on (None: scan complete).

    Each call reads every partition not yet at its end, limit // open partitions items each (at least one),
    so every partition advances on every call and no partition's tail waits for another's. The cursor is
    JSON: {"v": 2, "open": {partition: its start key, null before the first page}}; a partition missing
    from "open" was read to its end. A cursor of another form (an older version's, or one naming other
    partitions) starts the scan over.
    """
    positions = _open_positions(cursor, partitions)
    per_partition = max(1, limit // len(positions))
    found: list[T] = []
    after: dict[str, Any] = {}
    for partition, start_key in positions.items():
        items, last_key = fetch(partition, start_key, per_partition)
        found += items
        if last_key is not None:
            after[partition] = last_key
    if not after:
        return found, None
    return found, json.dumps({"v": CURSOR_VERSION, "open": after}, sort_keys=True)


def _open_positions(cursor: str | None, partitions: list[str]) -> dict[str, Any]:
    fresh: dict[str, Any] = dict.fromkeys(partitions)
    if cursor is None:
        return fresh
    try:
        decoded = json.loads(cursor)
    except ValueError:
        return fresh
    if not isinstance(decoded, dict) or decoded.get("v") != CURSOR_VERSION:
        return fresh
    open_positions = decoded.get("open")
    if (
        not isinstance(open_positions, dict)
        or not open_positions
        or not set(open_positions) <= set(partitions)
    ):
        return fresh
    return {partition: open_positions[partition] for partition in partitions if partition in open_positions}
