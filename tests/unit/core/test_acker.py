"""The executor's acker: finished entries acknowledged in batches, everything sent by the end of a run."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from hookline.domain.delivery import StreamEntry
from hookline.domain.models import Member
from hookline.usecases.acker import Acker
from tests.fakes.metrics import RecordingMetrics


class AckRecorder:
    """The ack_many of a ready stream, recording each batch; fails the first `failures` calls."""

    def __init__(self, failures: int = 0) -> None:
        self.batches: list[list[str]] = []
        self.failures = failures
        self.lock = threading.Lock()

    def ack_many(self, entries: Sequence[StreamEntry]) -> int:
        with self.lock:
            if self.failures:
                self.failures -= 1
                raise ConnectionError("redis is down")
            self.batches.append([e.entry_id for e in entries])
        return len(entries)


def entries(count: int) -> list[StreamEntry]:
    return [StreamEntry(0, f"{i}-0", Member("t", f"j{i}", 1), 1) for i in range(count)]


def test_given_entries_from_many_threads_when_running_ends_then_each_was_acked_once_in_bounded_batches() -> (
    None
):
    stream = AckRecorder()
    acker = Acker(stream, RecordingMetrics(), gather_ms=1_000, batch=8)  # type: ignore[arg-type]
    finished = entries(100)

    with acker.running():
        assert acker.active
        threads = [
            threading.Thread(target=lambda part=part: [acker.ack(e) for e in part])
            for part in (finished[i::4] for i in range(4))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    assert not acker.active
    sent = [entry_id for batch in stream.batches for entry_id in batch]
    assert sorted(sent) == sorted(e.entry_id for e in finished)
    assert max(len(batch) for batch in stream.batches) <= 8
    # Batched: far fewer calls than entries (a call per 8 while they pour in, the rest at the end).
    assert len(stream.batches) < 100 // 2
    assert (acker.queued, acker.sent) == (100, 100)


def test_given_a_failing_batch_when_acked_then_it_is_counted_and_later_batches_still_go() -> None:
    stream = AckRecorder(failures=1)
    metrics = RecordingMetrics()
    acker = Acker(stream, metrics, gather_ms=0, batch=64)  # type: ignore[arg-type]
    first, second = entries(2)

    with acker.running():
        acker.ack(first)
        for _ in range(10_000):  # the first batch (failing) is sent before the second is queued
            if acker.sent:
                break
            threading.Event().wait(0.001)
        assert acker.sent == 1
        acker.ack(second)

    # The failed entry stays pending in Redis, for a recoverer; the next one is acknowledged.
    assert stream.batches == [[second.entry_id]]
    assert metrics.counts["AckErrors"] == 1


class StuckStream:
    """The ack_many of a stream whose Redis stopped answering: it returns once released (10 s at most)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.returned = threading.Event()

    def ack_many(self, entries: Sequence[StreamEntry]) -> int:
        self.release.wait(timeout=10)
        self.returned.set()
        return len(entries)


def test_given_a_batch_stuck_on_redis_when_running_ends_then_it_stops_waiting_at_its_bound() -> None:
    stream = StuckStream()
    acker = Acker(stream, RecordingMetrics(), gather_ms=0, stop_s=0.2)  # type: ignore[arg-type]

    try:
        with acker.running():
            acker.ack(entries(1)[0])
        # running() ended while the batch was still stuck: it did not wait for Redis.
        assert not stream.returned.is_set()
        assert not acker.active
    finally:
        stream.release.set()
