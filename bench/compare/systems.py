"""The systems under comparison behind one interface: start workers, submit jobs, stop workers."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from types import ModuleType
from typing import Protocol

from bench.compare.client import ClientProcess


class System(Protocol):
    """One job queue as the comparison drives it.

    redis_url names the system's own Redis (the local stack runs one), None the bench's shared one;
    batch_submit says whether the system has a batch enqueue (the batch scenario); a system that is not
    pausable cannot hold queued jobs while stopped (drain then releases them by a
    common due time); cpu_skip_pids are processes in the measured trees whose CPU is reported apart (a
    Redis or DynamoDB emulator inside the local stack); notes end up in the output.
    """

    name: str
    redis_url: str | None
    pausable: bool
    batch_submit: bool
    cpu_skip_pids: set[int]
    notes: list[str]

    def start(self) -> list[int]:
        """Starts the workers; returns the pids whose process trees do the work."""
        ...

    def stop(self) -> None:
        """Stops the workers (jobs not yet run stay queued)."""
        ...

    def submit(self, jobs: list[tuple[str, float | None]], batch: bool = False) -> float | None:
        """Enqueues jobs, (id, due wall time in s, or None for now), from the bench's client (client.py):
        one call per job, or the system's batch enqueue with batch; returns the client's CPU seconds, or
        None when the jobs were handed over inside the bench's own process (its CPU is then the client's)."""
        ...

    def close(self) -> None:
        """Releases the system's connections."""
        ...

    def counters(self) -> dict[str, float]:
        """Returns running totals the scenarios diff (DynamoDB requests and units, Lambda invocations,
        CPU spent submitting inside the worker tree, the store emulator's CPU); empty for the peers."""
        ...


class Peer(Protocol):
    """A peer module's Peer class (bench/compare/peers)."""

    name: str

    def worker_commands(self, python: str) -> list[list[str]]: ...

    def close(self) -> None: ...


class CommandWorkers:
    """Runs a peer's worker commands as child processes (each in its own process group), and the bench's
    client with the peer module's senders, under the peer's interpreter (the module's PYTHON, if any)."""

    redis_url: str | None = None
    pausable = True
    batch_submit = True

    def __init__(self, peer: Peer, module: ModuleType, env: dict[str, str], log_dir: str) -> None:
        self.name = peer.name
        self.cpu_skip_pids: set[int] = set()
        self.notes: list[str] = []
        self._peer = peer
        self._env = env
        self._log = open(os.path.join(log_dir, f"{self.name}.log"), "ab")  # noqa: SIM115
        self._processes: list[subprocess.Popen[bytes]] = []
        self._client = ClientProcess(
            getattr(module, "PYTHON", sys.executable), module.__name__, env, self._log
        )

    def start(self) -> list[int]:
        """Starts every worker command."""
        log = self._log
        for command in self._peer.worker_commands(sys.executable):
            self._processes.append(
                subprocess.Popen(command, env=self._env, stdout=log, stderr=log, start_new_session=True)
            )
        return [process.pid for process in self._processes]

    def stop(self) -> None:
        """Terminates every worker's process group, then kills what is left after 10 s."""
        for process in self._processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for process in self._processes:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self._processes = []

    def submit(self, jobs: list[tuple[str, float | None]], batch: bool = False) -> float | None:
        """Enqueues from the bench's client through the peer's senders; returns the client's CPU."""
        return self._client.submit(jobs, batch)

    def close(self) -> None:
        """Closes the client and the peer."""
        self._client.close()
        self._peer.close()
        self._log.close()

    def counters(self) -> dict[str, float]:
        """The peers have no store to count."""
        return {}
