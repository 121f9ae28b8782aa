"""The executor's heartbeat: keeps its in-flight work visibly alive, in Redis and in DynamoDB.

Two facts let another executor take a job over, and the heartbeat keeps both false while an attempt runs:
its stream entry idle for redeliver_after_ms (then a recoverer re-delivers it), and its job's lease expired
(then a claim succeeds). Entries are beaten every heartbeat_ms; a lease is renewed once less than
renew_below_ms of it is left, so an attempt that ends early in its first lease costs no renewal write.
When the executor dies both stop together: its entries turn idle and its leases run out within lease_ms.

Redis and DynamoDB are beaten from two threads, so a slow DynamoDB (a brownout) cannot delay the entries'
beats past redeliver_after_ms and get a live attempt re-delivered.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from hookline.domain.delivery import StreamEntry
from hookline.domain.errors import StaleState
from hookline.domain.leases import LeaseTiming
from hookline.domain.models import Job
from hookline.ports import Clock, JobStore, MetricsSink, ReadyStream

logger = logging.getLogger(__name__)


class Hold:
    """One attempt in flight: its stream entry and, once claimed, the job and the lease it holds."""

    def __init__(self, entry: StreamEntry) -> None:
        self.entry = entry
        self.job: Job | None = None
        self.lease_expires_at_ms = 0
        self.lost = False  # a renewal found another attempt holding the job


class Heartbeat:
    """Tracks the executor's in-flight attempts and, while running, beats their entries and leases."""

    def __init__(
        self, stream: ReadyStream, store: JobStore, clock: Clock, timing: LeaseTiming, metrics: MetricsSink
    ) -> None:
        self._stream = stream
        self._store = store
        self._clock = clock
        self._timing = timing
        self._metrics = metrics
        self._lock = threading.Lock()  # the holds and their fields
        self._life = threading.Lock()  # starting and stopping the threads
        self._holds: dict[int, Hold] = {}
        self._users = 0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    @property
    def renewing(self) -> bool:
        """Tells whether the heartbeat threads run (so leases are renewed while attempts last)."""
        return self._users > 0

    def track(self, entry: StreamEntry) -> Hold:
        """Starts beating entry; returns its hold, to pass to claimed() and release()."""
        hold = Hold(entry)
        with self._lock:
            self._holds[id(hold)] = hold
        return hold

    def claimed(self, hold: Hold, job: Job) -> None:
        """Records the job an attempt claimed and its lease, which the heartbeat now renews."""
        assert job.lease_expires_at_ms is not None
        with self._lock:
            hold.job, hold.lease_expires_at_ms = job, job.lease_expires_at_ms

    def release(self, hold: Hold) -> None:
        """Stops beating hold: its entry was finished, or is left pending for a recoverer on purpose."""
        with self._lock:
            self._holds.pop(id(hold), None)

    def beat_entries(self) -> None:
        """Resets the idle time of every tracked entry (one Redis call per shard)."""
        with self._lock:
            entries = [hold.entry for hold in self._holds.values()]
        if entries:
            self._stream.heartbeat(entries)

    def renew_leases(self) -> None:
        """Renews every lease with less than renew_below_ms left (one conditional write each).

        A renewal that fails is counted (HeartbeatErrors) and tried again at the next beat; it never keeps
        the others from being renewed.
        """
        now_ms = self._clock.now_ms()
        with self._lock:
            due = [
                hold
                for hold in self._holds.values()
                if hold.job is not None
                and not hold.lost
                and hold.lease_expires_at_ms - now_ms < self._timing.renew_below_ms
            ]
        for hold in due:
            assert hold.job is not None
            lease_ms = self._clock.now_ms() + self._timing.lease_ms
            try:
                self._store.renew_lease(hold.job, lease_ms)
            except StaleState:
                # Another attempt took the job over (this one was stalled past its lease): it owns the
                # outcome now, and this attempt's finish will be refused.
                with self._lock:
                    hold.lost = True
                self._metrics.count("LeaseLost")
                continue
            except Exception:
                # This write failed (a throttled partition, a timeout): the lease holds until it expires and
                # the next beat tries again. The other holds due are still renewed, or one failing item
                # (always first in line) would let every other lease run out and be taken over.
                logger.warning("lease renewal failed", exc_info=True, extra={"job_id": hold.job.job_id})
                self._metrics.count("HeartbeatErrors")
                continue
            with self._lock:
                hold.lease_expires_at_ms = max(hold.lease_expires_at_ms, lease_ms)
            self._metrics.count("LeaseRenewed")

    @contextmanager
    def running(self) -> Iterator[None]:
        """Beats entries and renews leases in background threads for the duration of the block."""
        with self._life:
            self._users += 1
            if self._users == 1:
                self._stop.clear()
                self._threads = [
                    threading.Thread(target=self._loop, args=(step,), name=name, daemon=True)
                    for step, name in (
                        (self.beat_entries, "beat-entries"),
                        (self.renew_leases, "renew-leases"),
                    )
                ]
                for thread in self._threads:
                    thread.start()
        try:
            yield
        finally:
            with self._life:
                self._users -= 1
                if self._users == 0:
                    self._stop.set()
                    for thread in self._threads:
                        thread.join(timeout=30)

    def _loop(self, step: Callable[[], None]) -> None:
        while not self._stop.wait(self._timing.heartbeat_ms / 1000):
            try:
                step()
            except Exception:
                # Redis or DynamoDB unavailable: the next beat tries again; the lease and idle bounds say
                # how many beats may fail before the work is taken over.
                logger.warning("heartbeat failed", exc_info=True)
                self._metrics.count("HeartbeatErrors")
