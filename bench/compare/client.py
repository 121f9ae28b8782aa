"""The client every system is submitted from: one process, CLIENT_THREADS threads, each with its own sender.

    python -m bench.compare.client <sender module>

The same client for every system, so the submit figures compare like with like. The sender module
(a peer's module, or hookline_sender) provides open_sender(index) -> a Sender for thread index, with
one(job_id, due_s) (one call per job: the headline scenarios) and many(jobs) (the system's batch enqueue:
the batch scenario, BATCH jobs a call). Jobs are dealt out to the threads in turn (one call per job) or
in batches of BATCH (batch).

The process reads one command a line on stdin, {"jobs": [[id, due_s or null], ...], "batch": bool}, and
answers one line on stdout: {"cpu_s": the CPU the process spent submitting, read from its own clock} or
{"error": a traceback}. The senders are opened on the first command and kept (their connections warm), as
a long-lived client keeps them.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any, Protocol

CLIENT_THREADS = 2
BATCH = 100  # jobs per batch call (POST /v1/jobs/batch's limit; the same for every system)
Job = tuple[str, float | None]


class Sender(Protocol):
    """One client thread's connection to a system."""

    def one(self, job_id: str, due_s: float | None) -> None:
        """Enqueues one job: now (due_s None) or at due_s (wall time, s)."""
        ...

    def many(self, jobs: list[Job]) -> None:
        """Enqueues up to BATCH jobs with the system's batch enqueue."""
        ...

    def close(self) -> None: ...


def _shares(jobs: list[Job], batch: bool) -> list[list[list[Job]]]:
    """Returns each thread's calls: a job a call dealt out in turn, or BATCH jobs a call."""
    if not batch:
        return [[[job] for job in jobs[i::CLIENT_THREADS]] for i in range(CLIENT_THREADS)]
    calls = [jobs[i : i + BATCH] for i in range(0, len(jobs), BATCH)]
    return [calls[i::CLIENT_THREADS] for i in range(CLIENT_THREADS)]


def submit(senders: list[Sender], jobs: list[Job], batch: bool) -> float:
    """Submits from CLIENT_THREADS threads; returns the process's CPU seconds spent; raises what a thread
    raised."""
    errors: list[BaseException] = []

    def work(sender: Sender, calls: list[list[Job]]) -> None:
        try:
            for call in calls:
                if batch:
                    sender.many(call)
                else:
                    sender.one(*call[0])
        except BaseException as error:
            errors.append(error)

    started = time.process_time()
    threads = [
        threading.Thread(target=work, args=(sender, calls))
        for sender, calls in zip(senders, _shares(jobs, batch), strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return time.process_time() - started


def main(module_name: str) -> None:
    """Answers commands until stdin closes."""
    module = importlib.import_module(module_name)
    open_sender: Callable[[int], Sender] = module.open_sender
    senders: list[Sender] = []
    for line in sys.stdin:
        try:
            if not senders:
                senders = [open_sender(i) for i in range(CLIENT_THREADS)]
            command = json.loads(line)
            jobs = [(job_id, due_s) for job_id, due_s in command["jobs"]]
            reply: dict[str, Any] = {"cpu_s": submit(senders, jobs, command["batch"])}
        except Exception:
            reply = {"error": traceback.format_exc()}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    for sender in senders:
        sender.close()


class ClientProcess:
    """The bench's end: starts the client under a given interpreter and sends it commands."""

    def __init__(self, python: str, module: str, env: dict[str, str], log: Any) -> None:
        self.process = subprocess.Popen(
            [python, "-m", "bench.compare.client", module],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env=env,
            text=True,
        )

    @property
    def pid(self) -> int:
        """Returns the client's process id."""
        return self.process.pid

    def submit(self, jobs: list[Job], batch: bool = False) -> float:
        """Submits the jobs; returns the client's CPU seconds; raises RuntimeError if it failed."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"jobs": jobs, "batch": batch}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the client exited ({self.process.poll()})")
        reply = json.loads(line)
        if "error" in reply:
            last = reply["error"].strip().splitlines()[-1]
            raise RuntimeError(f"the client failed: {last}\n{reply['error']}")
        return float(reply["cpu_s"])

    def close(self) -> None:
        """Closes its stdin (it closes its senders and exits), then makes sure it is gone."""
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()


if __name__ == "__main__":
    main(sys.argv[1])
