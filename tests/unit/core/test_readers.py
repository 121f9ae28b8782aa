"""An executor's shard readers: one read per shard, never more entries taken than free delivery slots."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import pytest

from hookline.domain.clock import SystemClock
from hookline.domain.delivery import StreamEntry
from hookline.domain.errors import IndexUnavailable
from hookline.domain.models import Member
from hookline.ports import NullMetrics
from hookline.usecases.readers import Capacity, ShardReaders


class StreamsInMemory:
    """Ready streams per shard, read as XREADGROUP reads them (COUNT per stream named); thread-safe."""

    def __init__(self, entries_per_shard: dict[int, int]) -> None:
        self.lock = threading.Lock()
        self.waiting = {
            shard: [StreamEntry(shard, f"{i}-0", Member("t", f"s{shard}j{i}", 1), 0) for i in range(count)]
            for shard, count in entries_per_shard.items()
        }
        self.reads: list[tuple[tuple[int, ...], int]] = []
        self.returned: list[int] = []  # entries each read returned
        self.failures: dict[int, list[BaseException]] = {}

    def read_ready(self, shards: Sequence[int], count: int, block_ms: int) -> list[StreamEntry]:
        with self.lock:
            self.reads.append((tuple(shards), count))
            for shard in shards:
                if self.failures.get(shard):
                    raise self.failures[shard].pop(0)
            taken = []
            for shard in shards:
                taken += self.waiting[shard][:count]
                self.waiting[shard] = self.waiting[shard][count:]
            self.returned.append(len(taken))
        if not taken and block_ms:
            time.sleep(block_ms / 1000)
        return taken


class Deliveries:
    """Delivers each entry on a pool after a short hold, tracking how many were taken but not finished."""

    def __init__(self, capacity: Capacity, workers: int, hold_s: float = 0.003) -> None:
        self.capacity = capacity
        self.pool = ThreadPoolExecutor(max_workers=workers)
        self.hold_s = hold_s
        self.lock = threading.Lock()
        self.outstanding = 0
        self.most_outstanding = 0
        self.done: list[StreamEntry] = []

    def deliver(self, entry: StreamEntry) -> None:
        with self.lock:
            self.outstanding += 1
            self.most_outstanding = max(self.most_outstanding, self.outstanding)
        self.pool.submit(self._run, entry)

    def _run(self, entry: StreamEntry) -> None:
        time.sleep(self.hold_s)
        with self.lock:
            self.outstanding -= 1
            self.done.append(entry)
        self.capacity.give(1)


def run_readers(streams: StreamsInMemory, shards: list[int], slots: int, run_ms: int) -> Deliveries:
    clock = SystemClock()
    capacity = Capacity(slots)
    deliveries = Deliveries(capacity, workers=slots)
    readers = ShardReaders(streams, clock, NullMetrics(), shards, capacity, deliveries.deliver)  # type: ignore[arg-type]
    readers.start(clock.now_ms() + run_ms, block_ms=20)
    assert readers.join(timeout_s=run_ms / 1000 + 5)
    deliveries.pool.shutdown(wait=True)
    readers.raise_failure()
    return deliveries


def test_given_four_busy_shards_when_read_then_taken_entries_never_exceed_the_free_slots() -> None:
    streams = StreamsInMemory({shard: 60 for shard in range(4)})

    deliveries = run_readers(streams, [0, 1, 2, 3], slots=8, run_ms=600)

    assert len(deliveries.done) == 240
    # One XREADGROUP over four streams took COUNT from each: up to 4 x the free slots at once.
    assert deliveries.most_outstanding <= 8
    assert {len(shards) for shards, _ in streams.reads} == {1}
    assert max(count for _, count in streams.reads) <= 8


def test_given_three_quiet_shards_when_one_is_busy_then_its_reader_gets_the_slots_they_do_not_hold() -> None:
    streams = StreamsInMemory({0: 0, 1: 0, 2: 0, 3: 200})

    deliveries = run_readers(streams, [0, 1, 2, 3], slots=8, run_ms=800)

    assert len(deliveries.done) == 200
    # Each quiet reader blocks holding one slot, so the busy one reads with up to 8 - 3 at once.
    assert max(count for shards, count in streams.reads if shards == (3,)) >= 5


def test_given_redis_blip_on_one_shard_when_read_then_that_reader_backs_off_and_the_others_go_on() -> None:
    streams = StreamsInMemory({0: 20, 1: 20})
    streams.failures[1] = [IndexUnavailable("redis is unavailable") for _ in range(2)]

    deliveries = run_readers(streams, [0, 1], slots=4, run_ms=1_000)

    assert sorted(e.member.job_id for e in deliveries.done) == sorted(
        [f"s0j{i}" for i in range(20)] + [f"s1j{i}" for i in range(20)]
    )


def test_given_a_bug_in_one_shards_read_when_read_then_every_reader_stops_and_it_is_raised() -> None:
    streams = StreamsInMemory({0: 0, 1: 0})
    streams.failures[0] = [RuntimeError("a bug in the read")]

    with pytest.raises(RuntimeError, match="a bug in the read"):
        run_readers(streams, [0, 1], slots=4, run_ms=10_000)
    assert not [t for t in threading.enumerate() if t.name.startswith("read-")]


class RecordingCapacity(Capacity):
    """A Capacity that records how many slots each take asked to gather."""

    def __init__(self, slots: int) -> None:
        super().__init__(slots)
        self.asked: list[int] = []

    def take(self, most: int, timeout_s: float, at_least: int = 1, gather_s: float = 0.0) -> int:
        self.asked.append(at_least)
        return super().take(most, timeout_s, at_least, gather_s)


def test_given_one_slot_free_when_taken_with_gather_then_it_takes_what_is_free_after_waiting() -> None:
    capacity = Capacity(1)

    assert capacity.take(64, 1.0, at_least=4, gather_s=0.01) == 1
    assert capacity.free == 0


def test_given_enough_slots_free_when_taken_with_gather_then_it_takes_them_all_but_never_more() -> None:
    capacity = Capacity(6)

    assert capacity.take(5, 1.0, at_least=4, gather_s=10.0) == 5
    assert capacity.free == 1


def test_given_slots_freed_while_gathering_when_taken_then_one_take_gets_them_together() -> None:
    capacity = Capacity(4)
    assert capacity.take(3, 1.0) == 3
    giver = threading.Thread(target=lambda: [capacity.give(1) for _ in range(3)])

    giver.start()
    # Waits (up to 10 s, far more than the giver needs) for 4 slots; without gathering it would take 1.
    taken = capacity.take(64, 1.0, at_least=4, gather_s=10.0)
    giver.join()

    assert taken == 4
    assert capacity.free == 0


def gathering_readers(entries: int) -> tuple[StreamsInMemory, RecordingCapacity, Deliveries, ShardReaders]:
    """Returns one shard of `entries` entries, 8 recorded slots, 8 delivery workers, and its readers, which
    gather 4 slots after a full read (waiting up to 10 s for them)."""
    streams = StreamsInMemory({0: entries})
    capacity = RecordingCapacity(8)
    deliveries = Deliveries(capacity, workers=8)
    readers = ShardReaders(
        streams,  # type: ignore[arg-type]
        SystemClock(),
        NullMetrics(),
        [0],
        capacity,
        deliveries.deliver,
        gather=4,
        gather_ms=10_000,
    )
    return streams, capacity, deliveries, readers


def test_given_a_backlog_when_read_with_gather_then_reads_are_batched_and_never_exceed_free_slots() -> None:
    streams, capacity, deliveries, readers = gathering_readers(200)
    clock = SystemClock()

    readers.start(clock.now_ms() + 1_000, block_ms=20)
    assert readers.join(timeout_s=6)
    deliveries.pool.shutdown(wait=True)
    readers.raise_failure()

    assert len(deliveries.done) == 200
    assert deliveries.most_outstanding <= 8
    assert max(count for _, count in streams.reads) <= 8
    # The first read is at once (no backlog known yet); after full reads a reader gathers 4 slots.
    assert capacity.asked[0] == 1
    assert 4 in capacity.asked
    assert len([n for n in streams.returned if n]) <= 200 // 3


def test_given_a_short_read_when_the_stream_is_drained_then_the_next_read_does_not_gather() -> None:
    _, capacity, deliveries, readers = gathering_readers(2)
    clock = SystemClock()

    readers.start(clock.now_ms() + 200, block_ms=20)
    assert readers.join(timeout_s=5)
    deliveries.pool.shutdown(wait=True)

    assert len(deliveries.done) == 2
    # Every read came back short of what it asked for: no take waited to gather slots.
    assert set(capacity.asked) == {1}


class TrickleStream:
    """One shard's ready stream that jobs reach one at a time; a blocked read waits for the next, as
    XREADGROUP BLOCK does (close() ends it empty)."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.waiting: list[StreamEntry] = []
        self.closed = False
        self.reads: list[tuple[int, int, int]] = []  # (count, block_ms, entries returned)

    def add(self, entry: StreamEntry) -> None:
        with self.changed:
            self.waiting.append(entry)
            self.changed.notify_all()

    def close(self) -> None:
        with self.changed:
            self.closed = True
            self.changed.notify_all()

    def read_ready(self, shards: Sequence[int], count: int, block_ms: int) -> list[StreamEntry]:
        with self.changed:
            if block_ms:
                self.changed.wait_for(lambda: bool(self.waiting) or self.closed, block_ms / 1000)
            taken, self.waiting = self.waiting[:count], self.waiting[count:]
            self.reads.append((count, block_ms, len(taken)))
            return taken


@pytest.mark.parametrize(("shards", "most_reads_per_job"), [([0], 1), ([0, 1], 2)])
def test_given_jobs_trickling_in_when_read_then_a_lone_reader_reads_each_with_one_call(
    shards: list[int], most_reads_per_job: int
) -> None:
    # Each job reaches the stream once the one before was delivered, as when jobs are submitted one by one
    # to an idle executor. A reader used to ask without blocking first, find nothing, then block: two
    # XREADGROUPs per job. A drained stream is now read blocking at once; a lone reader holds its slots.
    stream, quiet = TrickleStream(), TrickleStream()
    capacity = Capacity(8)
    deliveries = Deliveries(capacity, workers=8, hold_s=0)
    streams = {0: stream, 1: quiet}

    class Streams:
        def read_ready(self, shards: Sequence[int], count: int, block_ms: int) -> list[StreamEntry]:
            return streams[shards[0]].read_ready(shards, count, block_ms)

    readers = ShardReaders(Streams(), SystemClock(), NullMetrics(), shards, capacity, deliveries.deliver)  # type: ignore[arg-type]
    readers.start(SystemClock().now_ms() + 60_000, block_ms=30_000)
    jobs = 20
    for i in range(jobs):
        stream.add(StreamEntry(0, f"{i}-0", Member("t", f"j{i}", 1), 0))
        while len(deliveries.done) <= i:  # the job was delivered (the hand-off is immediate)
            time.sleep(0.001)
    readers.stop()
    stream.close()
    quiet.close()
    assert readers.join(timeout_s=5)
    deliveries.pool.shutdown(wait=True)
    readers.raise_failure()

    assert len(deliveries.done) == jobs
    assert sum(returned for _, _, returned in stream.reads) == jobs
    # + the first read (no backlog known: without blocking) and the read close() ended. One of several
    # readers still reads twice per job: it blocks holding one slot, so a full read tells no backlog.
    assert len(stream.reads) <= most_reads_per_job * jobs + 2
    assert max(count for count, _, _ in stream.reads) <= 8


def test_given_a_gathering_reader_when_slots_come_back_one_by_one_then_woken_only_as_its_want_is_met() -> (
    None
):
    capacity = Capacity(4)
    assert capacity.take(4, 1.0) == 4
    woken_at: list[int] = []  # the free slots at each wake-up
    notify_all = capacity._changed.notify_all
    capacity._changed.notify_all = lambda: (woken_at.append(capacity._free), notify_all())  # type: ignore[method-assign]
    taken: list[int] = []
    reader = threading.Thread(target=lambda: taken.append(capacity.take(64, 5.0, at_least=4, gather_s=5.0)))

    reader.start()
    for want in (1, 4, 4, 4):  # first any slot, then the 4 it gathers
        deadline_s = time.monotonic() + 5.0
        while capacity._wanted != [want] and time.monotonic() < deadline_s:
            time.sleep(0.001)
        capacity.give(1)
    reader.join(timeout=5.0)

    assert taken == [4]
    assert woken_at == [1, 4]  # not at 2 and 3, when it would only have waited again


class IdleEntries:
    """A shard's abandoned entries, handed out by claim_idle (as Recoverer.claim_idle does) up to `most`."""

    def __init__(self, count: int) -> None:
        self.lock = threading.Lock()
        self.left = [StreamEntry(0, f"{i}-1", Member("t", f"idle{i}", 1), 1) for i in range(count)]
        self.claims: list[int] = []  # the most each claim asked for

    def claim_idle(self, shard: int, most: int) -> list[StreamEntry]:
        with self.lock:
            self.claims.append(most)
            taken, self.left = self.left[:most], self.left[most:]
        return taken


def test_given_idle_entries_and_a_backlog_when_read_then_idle_ones_delivered_first_within_free_slots() -> (
    None
):
    streams = StreamsInMemory({0: 200})
    idle = IdleEntries(5)
    clock = SystemClock()
    capacity = Capacity(4)
    deliveries = Deliveries(capacity, workers=4)
    handed: list[str] = []  # in the order the reader handed them over

    def deliver(entry: StreamEntry) -> None:
        handed.append(entry.member.job_id)
        deliveries.deliver(entry)

    readers = ShardReaders(
        streams,  # type: ignore[arg-type]
        clock,
        NullMetrics(),
        [0],
        capacity,
        deliver,
        claim_idle=idle.claim_idle,
        claim_every_ms=60_000,
    )
    readers.start(clock.now_ms() + 600, block_ms=20)
    assert readers.join(5)
    deliveries.pool.shutdown(wait=True)
    readers.raise_failure()

    assert handed[:5] == [f"idle{i}" for i in range(5)]  # a full claim asks again at once
    assert all(most <= 4 for most in idle.claims)  # never more than the free slots
    # Full claims ask again at once; once one came back short, the next waits claim_every_ms, so the busy
    # path (200 new entries read) asks no more: 4 (full), then the last one (short, or full and an empty one).
    assert len(idle.claims) <= 3
    assert len(deliveries.done) == 205
    assert deliveries.most_outstanding <= 4
