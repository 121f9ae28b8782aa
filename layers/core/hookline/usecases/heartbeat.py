"""The executor's heartbeat: keeps its in-flight work visibly alive, in Redis and in DynamoDB.

Two facts let another executor take a job over, and the heartbeat keeps both false while an attempt runs:
its stream entry idle for redeliver_after_ms (then a recoverer re-delivers it), and its job's lease expired
(then a claim succeeds). Entries are beaten every heartbeat_ms; a lease is renewed once less than
renew_below_ms of it is left, so an attempt that ends early in its first lease costs no renewal write.
When the executor dies both stop together: its entries turn idle and its leases run out within lease_ms.

Redis and DynamoDB are beaten from two threads, so a slow DynamoDB (a brownout) cannot delay the entries'
beats past redeliver_after_ms and get a live attempt re-delivered. The leases due are renewed in parallel
(RENEWAL_THREADS at a time), each call bounded by the lease it extends, so one slow write (a hot partition,
a stalled connection) cannot keep the other leases from being renewed before they run out.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager

from hookline.domain.delivery import StreamEntry
from hookline.domain.errors import StaleState
from hookline.domain.leases import LeaseTiming
from hookline.domain.models import Job
from hookline.ports import Clock, JobStore, MetricsSink, ReadyStream

logger = logging.getLogger(__name__)

# Renewals in flight at once. Healthy, a renewal takes milliseconds and one thread would do; the others are
# there for the renewals a slow DynamoDB call would otherwise queue behind (each ends by its own timeout).
RENEWAL_THREADS = 8


class Hold:
    """One attempt in flight: its stream entry and, once claimed, the job and the lease it holds."""

    def __init__(self, entry: StreamEntry) -> None:
        self.entry = entry
        self.job: Job | None = None
        self.lease_expires_at_ms = 0
        self.lost = False  # a renewal found another attempt holding the job
        self.renewing = False  # a renewal of this lease is in flight: later beats leave it to end


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
        self._renewals: ThreadPoolExecutor | None = None  # made on first use, shut down when running ends

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
        """Renews every lease with less than renew_below_ms left, in parallel (one conditional write each).

        Returns once the renewals started have ended, or after one heartbeat: a renewal still running then
        goes on in its thread, its hold skipped by later beats until it ends. Each renewal gives up before
        the lease it extends runs out, leaving the margin (renewal_timeout_ms). A renewal that fails is
        counted (HeartbeatErrors) and tried again at the next beat; it never keeps the others from being
        renewed.
        """
        now_ms = self._clock.now_ms()
        with self._lock:
            due = [
                hold
                for hold in self._holds.values()
                if hold.job is not None
                and not hold.lost
                and not hold.renewing
                and hold.lease_expires_at_ms - now_ms < self._timing.renew_below_ms
            ]
            for hold in due:
                hold.renewing = True
            if due and self._renewals is None:
                self._renewals = ThreadPoolExecutor(RENEWAL_THREADS, thread_name_prefix="renew-lease")
            pool = self._renewals
        if not due:
            return
        assert pool is not None
        started: list[Future[None]] = []
        for hold in due:
            try:
                started.append(pool.submit(self._renew, hold))
            except RuntimeError:  # the pool was shut down meanwhile: running ended, nothing to renew for
                with self._lock:
                    hold.renewing = False
        wait(started, timeout=self._timing.heartbeat_ms / 1000)

    def renewal_timeout_ms(self, lease_left_ms: int) -> int:
        """Returns how long a renewal of a lease with lease_left_ms left may take, retries included.

        It ends before the lease does, leaving the margin, so a stalled call gives up (and the next beat
        tries again on a fresh connection) while the lease still holds; never less than one heartbeat, so
        a lease nearly out still gets a real try.
        """
        return max(lease_left_ms - self._timing.margin_ms, self._timing.heartbeat_ms)

    def _renew(self, hold: Hold) -> None:
        """Renews one hold's lease (in a renewal thread); records the outcome on the hold and in metrics."""
        assert hold.job is not None
        now_ms = self._clock.now_ms()
        lease_ms = now_ms + self._timing.lease_ms
        timeout_ms = self.renewal_timeout_ms(hold.lease_expires_at_ms - now_ms)
        try:
            self._store.renew_lease(hold.job, lease_ms, timeout_ms=timeout_ms)
        except StaleState:
            # Another attempt took the job over (this one was stalled past its lease): it owns the outcome
            # now, and this attempt's finish will be refused.
            with self._lock:
                hold.lost, hold.renewing = True, False
            self._metrics.count("LeaseLost")
            return
        except Exception:
            # This write failed (a throttled partition, a timeout): the lease holds until it expires and the
            # next beat tries again.
            logger.warning("lease renewal failed", exc_info=True, extra={"job_id": hold.job.job_id})
            self._metrics.count("HeartbeatErrors")
            with self._lock:
                hold.renewing = False
            return
        with self._lock:
            hold.lease_expires_at_ms = max(hold.lease_expires_at_ms, lease_ms)
            hold.renewing = False
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
                    with self._lock:
                        renewals, self._renewals = self._renewals, None
                    if renewals is not None:
                        # Renewals still in flight end by their own timeouts; nothing waits for them.
                        renewals.shutdown(wait=False)

    def _loop(self, step: Callable[[], None]) -> None:
        while not self._stop.wait(self._timing.heartbeat_ms / 1000):
            try:
                step()
            except Exception:
                # Redis or DynamoDB unavailable: the next beat tries again; the lease and idle bounds say
                # how many beats may fail before the work is taken over.
                logger.warning("heartbeat failed", exc_info=True)
                self._metrics.count("HeartbeatErrors")
