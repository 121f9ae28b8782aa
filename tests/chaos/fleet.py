"""The handler processes of one scenario: promote, execute and reap runners, restarted as Lambda would.

Each slot is one schedule of the template played by tests.chaos.runner in its own process. A slot whose
process died (SIGKILLed by a test, or ended by the runner's timeout watchdog) gets a new process at its
next tick, as EventBridge's next invocation would land in a new sandbox; a stopped process (SIGSTOP) is
alive and is left alone. The test's main thread drives restarts through `poll()`, so every child is
started from that thread (see tests.chaos.processes).
"""

from __future__ import annotations

import math
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from hookline_local.template import load_template, schedules
from tests.chaos.processes import Child

PROMOTE, EXECUTE, REAP = "PromoteFunction", "ExecuteFunction", "ReapFunction"


def template_rate_s(function_id: str) -> float:
    """Returns the function's schedule period in template.yaml."""
    for spec in schedules(load_template()):
        if spec.function_id == function_id:
            return float(spec.rate_s)
    raise KeyError(f"{function_id} has no schedule in template.yaml")


@dataclass
class Slot:
    """One scheduled function played by one process at a time."""

    name: str
    function_id: str
    rate_s: float
    window_s: float | None
    child: Child | None = None
    started_s: float = 0.0
    restart_at_s: float | None = None
    restarts: int = 0
    stopped: bool = False
    pids: list[int] = field(default_factory=list)


class Fleet:
    """Starts, supervises, signals and finally kills a scenario's handler processes."""

    def __init__(self, env: dict[str, str], log_dir: Path) -> None:
        self.env = env
        self.log_dir = log_dir
        self.slots: dict[str, Slot] = {}

    def add(self, name: str, function_id: str, rate_s: float, window_s: float | None) -> Slot:
        """Starts a slot's first process now (EventBridge-like: first invocation at once)."""
        slot = Slot(name, function_id, rate_s, window_s)
        self.slots[name] = slot
        self._start(slot)
        return slot

    def _start(self, slot: Slot) -> None:
        command = [sys.executable, "-m", "tests.chaos.runner", slot.function_id, "--rate-s", str(slot.rate_s)]
        if slot.window_s is not None:
            command += ["--window-s", str(slot.window_s)]
        slot.child = Child(slot.name, command, self.log_dir / f"{slot.name}.log", self.env)
        slot.pids.append(slot.child.pid)
        if not slot.started_s:
            slot.started_s = time.monotonic()
        slot.restart_at_s = None

    def executors(self) -> list[Slot]:
        """Returns the execute slots."""
        return [slot for slot in self.slots.values() if slot.function_id == EXECUTE]

    def poll(self) -> None:
        """Restarts dead processes whose slot's next tick has come."""
        now = time.monotonic()
        for slot in self.slots.values():
            if slot.child is None or slot.child.alive() or slot.stopped:
                continue
            if slot.restart_at_s is None:
                ticks = math.floor((now - slot.started_s) / slot.rate_s) + 1
                slot.restart_at_s = slot.started_s + ticks * slot.rate_s
            if now >= slot.restart_at_s:
                slot.restarts += 1
                self._start(slot)

    def kill(self, slot: Slot) -> int:
        """SIGKILLs the slot's process; returns its pid. A new one starts at the slot's next tick."""
        assert slot.child is not None
        pid = slot.child.pid
        slot.child.kill()
        return pid

    def stop(self, slot: Slot) -> None:
        """SIGSTOPs the slot's process (it keeps its sockets and its place; nothing replaces it)."""
        assert slot.child is not None
        slot.stopped = True
        slot.child.signal(signal.SIGSTOP)

    def resume(self, slot: Slot) -> None:
        """SIGCONTs a stopped process."""
        assert slot.child is not None
        slot.child.signal(signal.SIGCONT)
        slot.stopped = False

    def memory_kb(self, slot: Slot) -> tuple[int, int]:
        """Returns (RSS, peak RSS) of the slot's current process in KiB."""
        return (0, 0) if slot.child is None else slot.child.memory_kb()

    def close(self) -> None:
        """Kills every process (a stopped one too: SIGKILL needs no SIGCONT)."""
        for slot in self.slots.values():
            if slot.child is not None:
                slot.child.kill()


def consumer_pid(name: bytes | str) -> int | None:
    """Returns the pid in a consumer name `executor-<pid>-<suffix>` (hookline.plumbing.wiring's default)."""
    text = name.decode() if isinstance(name, bytes) else name
    parts = text.split("-")
    if len(parts) >= 3 and parts[0] == "executor" and parts[1].isdigit():
        return int(parts[1])
    return None
