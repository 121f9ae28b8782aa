"""An executor's shard readers: one thread per shard reading its ready stream, within the free capacity.

One XREADGROUP over several shards' streams spans slots, which a Redis Cluster refuses; and its COUNT
applies per stream, so an executor reading S streams took up to S x its free capacity. Here each shard has
a reader thread, and every read first takes the slots it may fill from the executor's shared Capacity: the
entries read never outnumber the free delivery slots. One of several readers blocks for new entries holding
one slot only, so quiet shards do not keep slots a busy shard could use; a reader alone (one shard) blocks
holding every slot it took, which no other reader could use, so whatever is waiting when it wakes comes in
that one read.

Jobs trickling in (each submitted while the executor is idle): a reader whose last read came back short
(the stream was drained a moment ago) blocks at once instead of first asking again without blocking, which
would cost an empty XREADGROUP per job; a lone reader then reads each job with one XREADGROUP.

Batches sized to the backlog: slots free one at a time as deliveries end, so reading as soon as one is
free costs one XREADGROUP per delivered job while a backlog lasts. A reader whose last read came back full
(the stream had at least as many entries as it asked for: a backlog) therefore waits up to READ_GATHER_MS
for up to `gather` slots to be free before it reads, and reads them all in one call. A reader whose last
read came back short (the stream is drained) reads at once, so a job arriving at a quiet executor is not
delayed. Gathering never takes more than the free slots either: the bound holds either way.

Abandoned deliveries first: before reading new entries a reader claims, in place, entries of its shard that
a gone executor left idle for the re-delivery idle time (Recoverer.claim_idle), with the slots it took.
Those are older than any backlog and re-adding them at the tail would queue them behind it. It asks at most
every CLAIM_IDLE_EVERY_MS while none come back, and again at once while a claim comes back full, so a busy
reader pays one script call a second per shard.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from hookline.domain import constants
from hookline.domain.delivery import StreamEntry
from hookline.domain.errors import IndexUnavailable
from hookline.ports import Clock, MetricsSink, ReadyStream
from hookline.usecases.outage import Outage

logger = logging.getLogger(__name__)


class Capacity:
    """The free delivery slots of one executor run, taken by its readers and given back per delivery.

    A slot comes back with every delivery that ends; waking every waiting reader each time (to find it
    still short of the slots it gathers) cost each a thread switch per delivery. give() wakes the readers
    only once the free slots reach what the least demanding of them waits for.
    """

    def __init__(self, slots: int) -> None:
        self._free = slots
        self._changed = threading.Condition()
        self._wanted: list[int] = []  # the free slots each waiting reader waits for

    def take(self, most: int, timeout_s: float, at_least: int = 1, gather_s: float = 0.0) -> int:
        """Takes up to `most` free slots, waiting up to timeout_s for one; returns how many (0: none came).

        With at_least > 1, once one slot is free it waits up to gather_s more for at_least of them, then
        takes what is free (at least one, at most `most`), so a reader in a backlog reads several entries
        in one call instead of one per freed slot.
        """
        with self._changed:
            if not self._wait_for(1, timeout_s):
                return 0
            if at_least > 1 and gather_s > 0:
                self._wait_for(min(at_least, most), gather_s)
            taken = min(most, self._free)
            self._free -= taken
            return taken

    def _wait_for(self, slots: int, timeout_s: float) -> bool:
        """Waits (the lock held) up to timeout_s for `slots` free slots; True when they are."""
        if self._free >= slots:
            return True
        self._wanted.append(slots)
        try:
            return self._changed.wait_for(lambda: self._free >= slots, timeout_s)
        finally:
            self._wanted.remove(slots)

    def give(self, count: int) -> None:
        """Returns slots (unused by a read, or freed by a delivery that ended)."""
        if count <= 0:
            return
        with self._changed:
            self._free += count
            # A waiter whose want is met wants at least the least want: waking on that loses no one.
            if self._wanted and self._free >= min(self._wanted):
                self._changed.notify_all()

    @property
    def free(self) -> int:
        """Returns the slots free now."""
        with self._changed:
            return self._free


class ShardReaders:
    """Reads every shard from a thread of its own until the deadline, handing each entry to `deliver`.

    `deliver` must give the entry's slot back to the capacity when its delivery ends. A Redis blip is
    backed off per reader (the others go on); anything else stops every reader and is raised by join().
    """

    def __init__(
        self,
        stream: ReadyStream,
        clock: Clock,
        metrics: MetricsSink,
        shards: Sequence[int],
        capacity: Capacity,
        deliver: Callable[[StreamEntry], None],
        sleep: Callable[[float], None] = time.sleep,
        gather: int = 1,
        gather_ms: int = constants.READ_GATHER_MS,
        claim_idle: Callable[[int, int], list[StreamEntry]] | None = None,
        claim_every_ms: int = constants.CLAIM_IDLE_EVERY_MS,
    ) -> None:
        self._stream = stream
        self._clock = clock
        self._metrics = metrics
        self._shards = list(shards)
        self._capacity = capacity
        self._deliver = deliver
        self._sleep = sleep
        self._gather = gather  # slots a reader in a backlog waits for (up to gather_ms) before reading
        self._gather_s = gather_ms / 1000
        self._claim_idle = claim_idle  # (shard, most) -> idle entries taken over, pending under this consumer
        self._claim_every_ms = claim_every_ms
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._error: BaseException | None = None
        self._lock = threading.Lock()
        self.read = 0  # entries handed to deliver

    def start(self, deadline_ms: int, block_ms: int) -> None:
        """Starts one reader per shard; each reads until deadline_ms, blocking up to block_ms at a time."""
        self._threads = [
            threading.Thread(
                target=self._read_safely,
                args=(shard, deadline_ms, block_ms),
                name=f"read-{shard}",
                daemon=True,
            )
            for shard in self._shards
        ]
        for thread in self._threads:
            thread.start()

    def join(self, timeout_s: float) -> bool:
        """Waits up to timeout_s for every reader to end; True when all did."""
        end = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(timeout=max(0.0, end - time.monotonic()))
        return not any(thread.is_alive() for thread in self._threads)

    def stop(self) -> None:
        """Asks every reader to end after its current read."""
        self._stop.set()

    def raise_failure(self) -> None:
        """Raises what ended a reader, if anything but the deadline or stop() did."""
        if self._error is not None:
            raise self._error

    def _read_safely(self, shard: int, deadline_ms: int, block_ms: int) -> None:
        try:
            self._read(shard, deadline_ms, block_ms)
        except BaseException as error:
            logger.exception("a shard reader failed; the executor's run ends", extra={"shard": shard})
            self._error = self._error or error
            self._stop.set()

    def _read(self, shard: int, deadline_ms: int, block_ms: int) -> None:
        outage = Outage(self._clock, self._metrics, f"execute shard {shard}")
        backlog = False  # the last read came back full: more entries are likely waiting
        drained = False  # the last read came back short: the stream was empty a moment ago
        alone = len(self._shards) == 1
        next_claim_ms = 0  # when this reader next looks for abandoned (idle) entries
        while not self._stop.is_set() and (now_ms := self._clock.now_ms()) < deadline_ms:
            taken = self._capacity.take(
                constants.READ_BATCH,
                block_ms / 1000,
                at_least=self._gather if backlog else 1,
                gather_s=self._gather_s,
            )
            if not taken:
                continue  # every slot busy for block_ms: look at the deadline and the stop, then again
            try:
                claimed: list[StreamEntry] = []
                if self._claim_idle is not None and now_ms >= next_claim_ms:
                    claimed = self._claim_idle(shard, taken)
                    # A full claim: more may be idle, so look again at once; else not before the interval.
                    next_claim_ms = now_ms if len(claimed) == taken else now_ms + self._claim_every_ms
                if claimed:
                    # Delivered like a read, without touching the backlog/drained state of the new entries.
                    outage.succeeded()
                    self._capacity.give(taken - len(claimed))
                    self._hand_over(claimed)
                    continue
                entries = [] if drained else self._stream.read_ready([shard], taken, 0)
                if not entries:
                    # Nothing waiting: block for the next entries, holding one slot only unless this reader
                    # is alone (nothing else takes slots). A blocked XREADGROUP returns at once what is
                    # waiting, so skipping the read without blocking after a drained stream loses nothing.
                    held = taken if alone else 1
                    self._capacity.give(taken - held)
                    taken = held
                    wait_ms = max(1, min(block_ms, deadline_ms - now_ms))
                    entries = self._stream.read_ready([shard], taken, wait_ms)
            except IndexUnavailable as error:
                # A Redis blip: back off and read again until the deadline (entries already taken carry on
                # in the pool; their own Redis steps fail into the executor's process_safely).
                self._capacity.give(taken)
                self._sleep(outage.failed(error, deadline_ms))
                continue
            outage.succeeded()
            backlog = len(entries) == taken and taken > 0
            drained = not backlog
            self._capacity.give(taken - len(entries))
            # Every entry read is pending under this consumer from here on. Each is handed to deliver at
            # once; should this thread die between the read and a hand-off, the entries not handed over
            # stay pending, unbeaten, and a recoverer re-delivers them once idle (never lost, never run
            # twice at once: the claim refuses a job whose lease another attempt holds).
            self._hand_over(entries)

    def _hand_over(self, entries: list[StreamEntry]) -> None:
        """Hands each entry (pending under this consumer) to deliver, counting it as read."""
        for entry in entries:
            with self._lock:
                self.read += 1
            self._deliver(entry)
