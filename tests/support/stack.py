"""Runs the promoter and executor loops in background threads, as their Lambda invocations would."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from hookline.plumbing.wiring import Container


@contextmanager
def running_loops(container: Container, max_runtime_s: float = 30.0) -> Iterator[None]:
    """Runs promoter and executor until the context exits (or max_runtime_s, so a test can never hang)."""
    stop_at_ms = container.clock.now_ms() + int(max_runtime_s * 1000)
    deadline = {"ms": stop_at_ms}
    promoter, executor = container.promoter, container.executor

    def promote() -> None:
        while container.clock.now_ms() < deadline["ms"]:
            promoter.run(min(deadline["ms"], container.clock.now_ms() + 200))

    def execute() -> None:
        while container.clock.now_ms() < deadline["ms"]:
            executor.run(min(deadline["ms"], container.clock.now_ms() + 200), block_ms=50)

    threads = [threading.Thread(target=promote, daemon=True), threading.Thread(target=execute, daemon=True)]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        deadline["ms"] = 0
        for thread in threads:
            thread.join(timeout=10)


def wait_until(predicate: object, timeout_s: float, interval_s: float = 0.05) -> None:
    """Polls predicate() until it is true; fails the test after timeout_s."""
    assert callable(predicate)
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(interval_s)
    raise AssertionError(f"condition not met within {timeout_s} s")
