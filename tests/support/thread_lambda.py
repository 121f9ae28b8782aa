"""Lambda played by threads, for idle mode's tests and bench: an asynchronous invoke of the promote or
execute function starts a thread that builds its own Container (a sandbox of its own, as Lambda gives each
concurrent invocation) and runs the handler's loop until its deadline, as functions/promote/app.py and
functions/execute/app.py do.
"""

from __future__ import annotations

import threading
import time

from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container

# The invocations' deadlines: far beyond what the tests wait, so only an idle exit ends them in time.
PROMOTE_RUN_MS = 60_000
EXECUTE_RUN_MS = 60_000
REAP_RUN_MS = 60_000


class ThreadLambda:
    """Plays Lambda for the promote and execute functions: each invoke runs in a thread with its own
    Container; counts invocations and tells which still run."""

    def __init__(self, settings: Settings, start_delay_ms: int = 0) -> None:
        self._settings = settings
        self._start_delay_s = start_delay_ms / 1000  # stands for a cold start (bench/idle_mode.py)
        self._lock = threading.Lock()
        self.invoked = {"promote": 0, "execute": 0, "reap": 0}
        self.ended = {"promote": 0, "execute": 0, "reap": 0}
        self._threads: list[threading.Thread] = []
        self._containers: list[Container] = []
        self.stop_at_ms: int | None = None  # a test's end: every loop's deadline is capped at it

    def container(self) -> Container:
        """Returns a container wired to this Lambda (submit's, or a new invocation's)."""
        built = Container(self._settings, consumer=f"c-{len(self._containers)}")
        built.promoter_waker = _Waker(self)  # type: ignore[misc]
        built.executor_launcher = _Launcher(self)  # type: ignore[misc]
        built.reaper_waker = _Waker(self, "reap")  # type: ignore[misc]
        with self._lock:
            self._containers.append(built)
        return built

    def invoke(self, function: str) -> None:
        with self._lock:
            self.invoked[function] += 1
        thread = threading.Thread(target=self._run, args=(function,), daemon=True)
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def running(self, function: str) -> int:
        with self._lock:
            return self.invoked[function] - self.ended[function]

    def _run(self, function: str) -> None:
        time.sleep(self._start_delay_s)
        container = self.container()
        try:
            now_ms = container.engine_clock.now_ms()
            if function == "promote":
                deadline = self._capped(now_ms + PROMOTE_RUN_MS)
                container.fan_out.promote_until(container.promoter, deadline)
            elif function == "reap":
                container.reaper.watch(self._capped(now_ms + REAP_RUN_MS))
            else:
                container.executor.run(self._capped(now_ms + EXECUTE_RUN_MS), block_ms=100)
        finally:
            with self._lock:
                self.ended[function] += 1

    def _capped(self, deadline_ms: int) -> int:
        return deadline_ms if self.stop_at_ms is None else min(deadline_ms, self.stop_at_ms)

    def close(self) -> None:
        self.stop_at_ms = 0
        for thread in list(self._threads):
            thread.join(timeout=15)
        for container in self._containers:
            container.close()


class _Waker:
    def __init__(self, lam: ThreadLambda, function: str = "promote") -> None:
        self._lambda = lam
        self._function = function

    def wake(self) -> bool:
        self._lambda.invoke(self._function)
        return True


class _Launcher:
    def __init__(self, lam: ThreadLambda) -> None:
        self._lambda = lam

    def launch(self, count: int) -> int:
        for _ in range(count):
            self._lambda.invoke("execute")
        return count
