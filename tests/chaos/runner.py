"""Plays EventBridge Scheduler and Lambda for one function, in a process a fault test can kill or stop.

    python -m tests.chaos.runner FUNCTION_ID --rate-s R [--window-s W] [--lifetime-s L]

The function's handler is loaded from template.yaml as Lambda loads it (hookline_local.runtime) and invoked
once at start and then every R seconds, each invocation in a thread of its own with a fresh context, so
invocations overlap as they do in AWS when one runs past the next tick. An invocation that raises ends
there, and the next one starts only at the next tick, as with a schedule whose retries are off (the
template sets MaximumRetryAttempts: 0): a loop that dies leaves a gap until then.

The context's remaining time is the template's Timeout, or with --window-s the time the handler keeps taking
work (W) plus the reserve it keeps back at the end (functions/execute/app.py RESERVE_MS, else the shared
safety margin): a short window compresses a 90 s promoter or a 420 s executor into a few seconds of work per
invocation, invoked back to back (W = R). An invocation still running when its context reaches zero makes
the process exit, as Lambda ends a sandbox whose invocation timed out; the fleet starts a new process at
the function's next tick.

Each invocation's start, end and error is written to stderr as a `chaos-runner {json}` line.

With HOOKLINE_CHAOS_CLOCK_SKEW_MS set, the process's host clock (hookline.domain.clock.SystemClock, the one
class that reads wall time) runs that many ms ahead (negative: behind), as on a host whose clock drifted;
the runner's own event times stay true.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import traceback
from typing import Any

from hookline.domain import clock, constants
from hookline_local.runtime import LocalContext, load_handler
from hookline_local.template import find_template, function_handler, function_timeout_s, load_template

WATCHDOG_POLL_S = 0.1
MAX_OVERLAP = 3  # invocations at once; a tick finding this many running starts none (bounded threads)


def report(event: str, **fields: Any) -> None:
    """Writes one runner event line to stderr (the process log)."""
    line = json.dumps({"event": event, "t_ms": time.time_ns() // 1_000_000, "pid": os.getpid(), **fields})
    # One write with its newline: print() writes the newline apart, and another thread's output could
    # land between the two on the shared log.
    sys.stderr.write(f"chaos-runner {line}\n")
    sys.stderr.flush()


class Runner:
    """Invokes one handler on a schedule and watches its invocations' deadlines."""

    def __init__(self, function_id: str, rate_s: float, window_s: float | None) -> None:
        template_path = find_template()
        template = load_template(template_path)
        handler_file, handler_name = function_handler(template, function_id)
        module_name = f"chaos_{function_id.lower()}"
        self.handler = load_handler(template_path.parent, handler_file, handler_name, module_name)
        module = sys.modules[module_name]
        timeout_s = float(function_timeout_s(template, function_id))
        if window_s is None:
            self.remaining_s = timeout_s
        else:
            reserve_ms = int(getattr(module, "RESERVE_MS", constants.INVOCATION_SAFETY_MARGIN_MS))
            self.remaining_s = min(timeout_s, window_s + reserve_ms / 1000)
        self.function_id = function_id
        self.rate_s = rate_s
        self.lock = threading.Lock()
        self.running: dict[int, LocalContext] = {}
        self.count = 0

    def tick(self) -> None:
        """Starts one invocation unless MAX_OVERLAP are still running."""
        with self.lock:
            if len(self.running) >= MAX_OVERLAP:
                report("skipped", function=self.function_id, running=len(self.running))
                return
            self.count += 1
            number = self.count
            context = LocalContext(f"hookline-chaos-{self.function_id}", self.remaining_s, 512, "us-east-1")
            self.running[number] = context
        threading.Thread(
            target=self._invoke, args=(number, context), name=f"invoke-{number}", daemon=True
        ).start()

    def _invoke(self, number: int, context: LocalContext) -> None:
        report(
            "invoke", function=self.function_id, n=number, remaining_ms=context.get_remaining_time_in_millis()
        )
        try:
            result = self.handler({}, context)
            report("return", function=self.function_id, n=number, result=result)
        except Exception as error:
            lines = traceback.format_exception_only(type(error), error)
            report("error", function=self.function_id, n=number, error="".join(lines).strip()[:500])
        finally:
            with self.lock:
                self.running.pop(number, None)

    def watchdog(self) -> None:
        """Exits the process when an invocation outlives its context (Lambda's timeout)."""
        while True:
            time.sleep(WATCHDOG_POLL_S)
            with self.lock:
                expired = [n for n, ctx in self.running.items() if ctx.get_remaining_time_in_millis() <= 0]
            if expired:
                report("timeout", function=self.function_id, n=expired)
                os._exit(124)

    def run(self, lifetime_s: float) -> None:
        """Ticks at start and every rate_s until lifetime_s has passed (a bound: fixtures kill us first)."""
        threading.Thread(target=self.watchdog, name="watchdog", daemon=True).start()
        started = time.monotonic()
        next_tick = started
        while next_tick < started + lifetime_s:
            time.sleep(max(0.0, next_tick - time.monotonic()))
            self.tick()
            next_tick += self.rate_s
        report("lifetime_over", function=self.function_id)


def skew_host_clock(skew_ms: int) -> None:
    """Makes every SystemClock of this process read skew_ms off the true time (before the handler loads)."""
    true_now_ms = clock.SystemClock.now_ms

    def skewed_now_ms(self: clock.SystemClock) -> int:
        return true_now_ms(self) + skew_ms

    clock.SystemClock.now_ms = skewed_now_ms  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> int:
    """Parses the arguments and runs the schedule."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("function_id", help="a function's logical id in template.yaml, e.g. ExecuteFunction")
    parser.add_argument("--rate-s", type=float, required=True, help="seconds between invocations")
    parser.add_argument("--window-s", type=float, default=None, help="seconds of work per invocation")
    parser.add_argument("--lifetime-s", type=float, default=900.0, help="stop ticking after this long")
    args = parser.parse_args(argv)
    skew_ms = int(os.environ.get("HOOKLINE_CHAOS_CLOCK_SKEW_MS", "0"))
    if skew_ms:
        skew_host_clock(skew_ms)
    runner = Runner(args.function_id, args.rate_s, args.window_s)
    report("ready", function=args.function_id, remaining_s=runner.remaining_s, rate_s=args.rate_s)
    runner.run(args.lifetime_s)
    # Let invocations still running finish, within their contexts (the watchdog still applies).
    while True:
        with runner.lock:
            if not runner.running:
                return 0
        time.sleep(WATCHDOG_POLL_S)


if __name__ == "__main__":
    raise SystemExit(main())
