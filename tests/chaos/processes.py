"""The fault suite's child processes: started from the test's main thread, signalled and killed by pid.

Every child goes through tests.chaos.launch, so it gets SIGKILL if the pytest process dies; fixtures kill
each one explicitly in teardown as well. A child is only ever signalled by the pid this module started.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import redis

REPO = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 30.0
KILL_WAIT_S = 10.0


class Child:
    """One started process, with its log file, that can be killed, stopped, resumed and measured."""

    def __init__(
        self, name: str, command: list[str], log_path: Path, env: dict[str, str] | None = None
    ) -> None:
        # PR_SET_PDEATHSIG fires when the *thread* that forked the child ends: only the main thread lives
        # as long as the test process, so children are started from it alone.
        assert threading.current_thread() is threading.main_thread(), "start children from the main thread"
        self.name = name
        self.log_path = log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        launcher = [sys.executable, "-m", "tests.chaos.launch", str(os.getpid()), "--"]
        with log_path.open("ab") as log:
            self._process = subprocess.Popen(
                launcher + command,
                cwd=REPO,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                # Its own session: a Ctrl-C at the terminal reaches pytest, whose teardown kills the child.
                start_new_session=True,
            )
        self.started_s = time.monotonic()

    @property
    def pid(self) -> int:
        """Returns the process id (the launcher execs the command, so it keeps this pid)."""
        return self._process.pid

    def alive(self) -> bool:
        """Tells whether the process has not exited (a stopped process is alive)."""
        return self._process.poll() is None

    @property
    def returncode(self) -> int | None:
        """Returns the exit status once exited (negative: the signal that ended it)."""
        return self._process.poll()

    def signal(self, signum: int) -> None:
        """Sends signum to this process only (never to a group or by name)."""
        if self.alive():
            os.kill(self.pid, signum)

    def kill(self) -> None:
        """SIGKILLs the process (stopped or not) and reaps it."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        self._process.wait(timeout=KILL_WAIT_S)

    def wait(self, timeout_s: float) -> int | None:
        """Waits for the process to exit on its own; returns its status, or None if it still runs."""
        try:
            return self._process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def memory_kb(self) -> tuple[int, int]:
        """Returns (resident set size, its high-water mark) in KiB, read from /proc; (0, 0) once gone."""
        values = {"VmRSS": 0, "VmHWM": 0}
        try:
            text = Path(f"/proc/{self.pid}/status").read_text()
        except OSError:
            return 0, 0
        for line in text.splitlines():
            name, _, rest = line.partition(":")
            if name in values:
                values[name] = int(rest.split()[0])
        return values["VmRSS"], values["VmHWM"]

    def log_tail(self, lines: int = 30) -> str:
        """Returns the last lines of the process's output, for failure messages."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def wait_ready(child: Child, ready: Callable[[], bool], what: str) -> None:
    """Polls ready() until it holds; raises (after killing the child) if it exits or takes too long."""
    end = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < end:
        if not child.alive():
            raise RuntimeError(f"{what} exited at start-up:\n{child.log_tail()}")
        with contextlib.suppress(OSError, redis.RedisError):
            if ready():
                return
        time.sleep(0.05)
    child.kill()
    raise RuntimeError(f"{what} was not ready within {READY_TIMEOUT_S:.0f} s:\n{child.log_tail()}")


def http_answers(url: str) -> bool:
    """Tells whether anything answers HTTP at url (any status counts)."""
    try:
        with urllib.request.urlopen(url, timeout=1):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


class RedisServer:
    """A redis-server on a fixed loopback port that a test can flush, stop, restart empty or with its data.

    It persists nothing on its own; `shutdown_saving` writes an RDB that the next `start` loads, which is
    how a test brings Redis back "with all its data" (a restart with persistence, or a fail-over).
    """

    def __init__(self, port: int, data_dir: Path, log_path: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise FileNotFoundError("redis-server is not on PATH")
        self.binary = binary
        self.port = port
        self.data_dir = data_dir
        self.log_path = log_path
        self.url = f"redis://127.0.0.1:{port}/0"
        self.child: Child | None = None
        data_dir.mkdir(parents=True, exist_ok=True)

    def start(self) -> float:
        """Starts the server (loading dump.rdb if a saving shutdown left one); returns when it answers."""
        command = [
            self.binary,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", str(self.data_dir),
            "--dbfilename", "dump.rdb",
            "--save", "",
            "--appendonly", "no",
        ]  # fmt: skip
        self.child = Child("redis", command, self.log_path)
        client = self.client(socket_timeout=1)
        try:
            wait_ready(self.child, lambda: bool(client.ping()), f"redis-server on port {self.port}")
        finally:
            client.close()
        return time.time()

    def client(self, socket_timeout: float = 5.0) -> redis.Redis:
        """Returns a new client (the caller closes it)."""
        return redis.Redis.from_url(self.url, socket_timeout=socket_timeout, socket_connect_timeout=1)

    def flushall(self) -> None:
        """Drops every key, as an operator's FLUSHALL would."""
        client = self.client()
        try:
            client.flushall()
        finally:
            client.close()

    def shutdown_saving(self) -> None:
        """Stops the server after writing its data to dump.rdb (SHUTDOWN SAVE)."""
        client = self.client()
        with contextlib.suppress(redis.ConnectionError):
            client.shutdown(save=True)  # the server closes the connection as it exits
        client.close()
        assert self.child is not None
        if self.child.wait(KILL_WAIT_S) is None:
            raise RuntimeError("redis-server did not exit after SHUTDOWN SAVE")

    def kill(self) -> None:
        """SIGKILLs the server: everything it held is gone (nothing was persisted)."""
        if self.child is not None:
            self.child.kill()
        (self.data_dir / "dump.rdb").unlink(missing_ok=True)

    def close(self) -> None:
        """Kills the server if it runs (teardown)."""
        if self.child is not None:
            self.child.kill()


class MotoServer:
    """moto's server (hookline_local.moto_server: every AWS API in memory) in a process of its own."""

    def __init__(self, port: int, log_path: Path) -> None:
        self.url = f"http://127.0.0.1:{port}"
        command = [sys.executable, "-m", "hookline_local.moto_server", "--port", str(port)]
        self.child = Child("moto", command, log_path)
        wait_ready(self.child, lambda: http_answers(f"{self.url}/moto-api/"), f"moto on port {port}")

    def reset(self) -> None:
        """Drops every table (tests use fresh table names as well)."""
        request = urllib.request.Request(f"{self.url}/moto-api/reset", method="POST")
        with urllib.request.urlopen(request, timeout=30):
            pass

    def close(self) -> None:
        """Kills the server."""
        self.child.kill()


class CuttableProxy:
    """A loopback TCP proxy process in front of an endpoint; `cut` makes the endpoint unreachable.

    Cut: every open connection is reset and the port refuses new ones (ECONNREFUSED), as when a network
    path or the endpoint goes away. `restore` listens again on the same port.
    """

    def __init__(self, listen_port: int, target_port: int, log_path: Path) -> None:
        self.port = listen_port
        self.url = f"http://127.0.0.1:{listen_port}"
        command = [
            sys.executable, "-m", "tests.chaos.proxy",
            "--listen-port", str(listen_port),
            "--target-port", str(target_port),
        ]  # fmt: skip
        self.child = Child("proxy", command, log_path)
        wait_ready(self.child, lambda: http_answers(f"{self.url}/moto-api/"), f"proxy on port {listen_port}")

    def cut(self) -> None:
        """Resets every connection and refuses new ones, until restore()."""
        self.child.signal(signal.SIGUSR1)
        end = time.monotonic() + 5
        while time.monotonic() < end and http_answers(f"{self.url}/moto-api/"):
            time.sleep(0.02)

    def restore(self) -> None:
        """Accepts connections again."""
        self.child.signal(signal.SIGUSR2)
        end = time.monotonic() + 5
        while time.monotonic() < end and not http_answers(f"{self.url}/moto-api/"):
            time.sleep(0.02)

    def close(self) -> None:
        """Kills the proxy."""
        self.child.kill()


class ThrottlingProxy:
    """An HTTP proxy process in front of moto (tests.chaos.throttle_proxy) that throttles a fraction of the
    DynamoDB requests, as DynamoDB refuses requests over a table's throughput."""

    def __init__(self, listen_port: int, target_port: int, log_path: Path) -> None:
        self.url = f"http://127.0.0.1:{listen_port}"
        command = [
            sys.executable, "-m", "tests.chaos.throttle_proxy",
            "--listen-port", str(listen_port),
            "--target-port", str(target_port),
        ]  # fmt: skip
        self.child = Child("throttle-proxy", command, log_path)
        wait_ready(self.child, lambda: http_answers(f"{self.url}/moto-api/"), f"proxy on port {listen_port}")

    def throttle(self, fraction: float) -> dict[str, float]:
        """Throttles this fraction of DynamoDB requests from now on (0: none, 1: all); returns the counts."""
        request = urllib.request.Request(
            f"{self.url}/__chaos/throttle", data=str(fraction).encode(), method="PUT"
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            counts: dict[str, float] = json.loads(response.read())
        return counts

    def close(self) -> None:
        """Kills the proxy."""
        self.child.kill()
