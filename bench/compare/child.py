"""A system that lives in one child process, driven over a pipe: start and stop its workers, submit batches.

Used where the state cannot be shared between processes (the engine over in-memory stores) or needs none
(the ceiling). The child answers each command in order; an exception in the child comes back as a
ChildError carrying its traceback, so a broken system fails its scenario instead of hanging it.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, Protocol

REPLY_TIMEOUT_S = 300.0  # a submit of a whole scenario's jobs is the longest command


class ChildError(RuntimeError):
    """The child failed a command; the message is its traceback."""


class Workers(Protocol):
    """What the child runs: the commands it answers."""

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def submit(self, jobs: list[tuple[str, float | None]]) -> float:
        """Enqueues jobs; returns the CPU seconds the child spent doing so."""
        ...

    def counters(self) -> dict[str, float]: ...

    def close(self) -> None: ...


def serve(connection: Connection, build: Callable[..., Workers], args: tuple[Any, ...]) -> None:
    """The child's main loop: builds the workers, then answers (command, argument) until "close"."""
    workers = build(*args)
    while True:
        command, argument = connection.recv()
        try:
            if command == "submit":
                reply: Any = workers.submit(argument)
            else:
                reply = getattr(workers, command)()
        except Exception:
            connection.send(("error", traceback.format_exc()))
            continue
        connection.send(("ok", reply))
        if command == "close":
            return


class ChildProcess:
    """The parent's end: starts the child and sends it commands, one at a time."""

    def __init__(self, build: Callable[..., Workers], *args: Any) -> None:
        self._ours, theirs = multiprocessing.Pipe()
        # spawn, not fork: the parent runs threads (tqdm, clients) whose locks a fork would copy held.
        context = multiprocessing.get_context("spawn")
        self.process = context.Process(target=serve, args=(theirs, build, args), daemon=True)
        self.process.start()

    @property
    def pid(self) -> int:
        """Returns the child's process id."""
        assert self.process.pid is not None
        return self.process.pid

    def call(self, command: str, argument: Any = None) -> Any:
        """Sends one command and returns the child's reply; raises ChildError if the child failed it."""
        self.send(command, argument)
        return self.reply(command)

    def send(self, command: str, argument: Any = None) -> None:
        """Sends one command without waiting (several children can then work at once); see reply()."""
        self._ours.send((command, argument))

    def reply(self, command: str) -> Any:
        """Waits for the reply to the command sent last; raises ChildError if the child failed it."""
        if not self._ours.poll(REPLY_TIMEOUT_S):
            raise ChildError(f"no reply to {command} within {REPLY_TIMEOUT_S:.0f} s")
        status, reply = self._ours.recv()
        if status == "error":
            raise ChildError(reply)
        return reply

    def close(self) -> None:
        """Asks the child to close, then makes sure it is gone."""
        if self.process.is_alive():
            with contextlib.suppress(ChildError, OSError, EOFError):
                self.call("close")
        self.process.join(timeout=10)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=5)
