"""Plays EventBridge Scheduler: invokes functions on the template's rates, each invocation in a thread.

Invocations overlap exactly as in AWS (a 90 s promoter started every 60 s), and fan-out adds execute
invocations through `launch`, bounded by `max_executors`.
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hookline_local.runtime import LambdaFunction

logger = logging.getLogger(__name__)

# What EventBridge Scheduler passes when a schedule sets no Input (the template sets none).
SCHEDULED_EVENT: dict[str, Any] = {}


@dataclass(frozen=True)
class Timer:
    """One schedule: a function and its rate."""

    function: LambdaFunction
    rate_s: float


class Scheduler:
    """Runs timers and fan-out invocations until stopped; counts invocations per function."""

    def __init__(
        self,
        timers: Sequence[Timer],
        executor: LambdaFunction,
        max_executors: int,
        report: Callable[[str], None] = print,
    ) -> None:
        self._timers = list(timers)
        self._executor = executor
        self._max_executors = max_executors
        self._report = report
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._running: dict[str, int] = {}
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        """Starts one timer thread per schedule; each invokes at once, then every rate_s."""
        for timer in self._timers:
            thread = threading.Thread(
                target=self._tick, args=(timer,), name=f"timer-{timer.function.function_id}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        """Starts no further invocation; running ones are left to the caller (Lambda cannot stop them)."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        """Tells whether stop() was called."""
        return self._stop.is_set()

    def running(self, function_id: str) -> int:
        """Returns how many invocations of a function are running now."""
        with self._lock:
            return self._running.get(function_id, 0)

    def launch(self, count: int) -> int:
        """Starts up to count extra execute invocations, keeping at most max_executors running."""
        started = 0
        for _ in range(count):
            with self._lock:
                if self._running.get(self._executor.function_id, 0) >= self._max_executors:
                    break
            if not self.invoke(self._executor, {"source": "hookline.fan-out"}):
                break
            started += 1
        if started:
            total = self.running(self._executor.function_id)
            self._report(f"fan-out: started {started} more executor(s); {total} running")
        return started

    def invoke(self, function: LambdaFunction, event: dict[str, Any]) -> bool:
        """Starts one invocation in a new thread; False once stopping."""
        if self._stop.is_set():
            return False
        with self._lock:
            self._running[function.function_id] = self._running.get(function.function_id, 0) + 1
        thread = threading.Thread(
            target=self._run, args=(function, event), name=f"invoke-{function.function_id}", daemon=True
        )
        thread.start()
        return True

    def _tick(self, timer: Timer) -> None:
        # EventBridge fires its first tick one period after creation; firing at once makes a fresh
        # local stack deliver at once instead of a minute later.
        while not self._stop.is_set():
            self.invoke(timer.function, dict(SCHEDULED_EVENT))
            self._stop.wait(timer.rate_s)

    def _run(self, function: LambdaFunction, event: dict[str, Any]) -> None:
        try:
            function.invoke(event)
        except Exception:
            # Once stopping, the services are going away under running invocations: expected noise.
            if not self._stop.is_set():
                self._report(f"{function.function_id} invocation failed:\n{traceback.format_exc()}")
        finally:
            with self._lock:
                self._running[function.function_id] -= 1
