"""The executor's delivery threads: a fixed set of workers taking entries from one queue.

concurrent.futures.ThreadPoolExecutor makes a Future (with its own Condition), a work item and a thread-count
check for every submit, and sets the Future's result after it: CPU on every delivered job for a result nothing
reads (the executor never looks at the Futures; docs/performance.md). Here a submit is one put on a
SimpleQueue and each worker loops on get(); there is nothing to wait for but the end of the pool.

What happens to an entry if a line fails halfway: the work function (Executor.process_and_settle) records
every outcome and gives the slot back itself; a failure escaping it is logged and the worker goes on with
the next entry, leaving that entry pending under the consumer, where a recoverer re-delivers it once
idle. An entry submitted after the pool stopped is refused with RuntimeError, as ThreadPoolExecutor refuses
it: its reader fails and the entry stays pending, for a recoverer.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

logger = logging.getLogger(__name__)

Item = TypeVar("Item")


class _Stop:
    """The marker that ends one worker, queued after everything submitted before the pool stopped."""


_STOP = _Stop()


class Workers(Generic[Item]):
    """Runs `work` on each item submitted while running(), in one of `count` threads; thread-safe."""

    def __init__(self, work: Callable[[Item], None], count: int, name: str = "deliver") -> None:
        if count < 1:
            raise ValueError("at least one worker is needed")
        self._work = work
        self._count = count
        self._name = name
        self._queue: queue.SimpleQueue[Item | _Stop] = queue.SimpleQueue()
        self._lock = threading.Lock()  # no item is queued behind the stop markers
        self._open = False

    def submit(self, item: Item) -> None:
        """Queues item for the next free worker; raises RuntimeError unless the pool is running."""
        with self._lock:
            if not self._open:
                raise RuntimeError("the workers are not running")
            self._queue.put(item)

    @contextmanager
    def running(self) -> Iterator[None]:
        """Starts the workers; on exit, waits until every item submitted before it was worked on."""
        threads = [
            threading.Thread(target=self._loop, name=f"{self._name}_{n}", daemon=True)
            for n in range(self._count)
        ]
        self._open = True
        for thread in threads:
            thread.start()
        try:
            yield
        finally:
            # The queue is FIFO: each worker meets a stop marker only after every item queued before it.
            with self._lock:
                self._open = False
                for _ in threads:
                    self._queue.put(_STOP)
            for thread in threads:
                thread.join()

    def _loop(self) -> None:
        while not isinstance(item := self._queue.get(), _Stop):
            try:
                self._work(item)
            except Exception:
                # The work function handles its own failures; this keeps the worker alive for the next item
                # should one escape it (the entry stays pending: see the module docstring). A BaseException
                # (SystemExit, KeyboardInterrupt) is no failure of one item: it ends the worker.
                logger.exception("a delivery worker's task failed")
