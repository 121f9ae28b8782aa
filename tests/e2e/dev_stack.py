"""Runs `hookline dev` as a subprocess, as the README does, and reads what it prints at start-up."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

from hookline_local.cli import STOP_BUDGET_S
from tests.support.redis_server import free_port

HOOKLINE = Path(sys.executable).parent / "hookline"
REPO = Path(__file__).resolve().parents[2]
# The deployed stack's first start in a fresh checkout pip-installs the layer's dependencies (~25 s).
START_TIMEOUT_S = 150.0
# The stack exits within its stop budget once it handles the signal (hookline_local.cli.stop_within); on a
# loaded machine the signal's handling and the process's exit wait for a core as well.
LOADED_MACHINE_SLACK_S = 20.0
STOP_TIMEOUT_S = STOP_BUDGET_S + LOADED_MACHINE_SLACK_S
DEPLOYED = "deployed"
HAND_WIRED = "hand-wired"


class DevStack:
    """One `hookline dev` process on free ports, with its state (dev.env, logs) in state_dir.

    It runs in its own process group, as a shell runs a command, so that a test can signal the group as
    a terminal's Ctrl-C does.
    """

    def __init__(self, state_dir: Path, kind: str = DEPLOYED, args: tuple[str, ...] = ()) -> None:
        self.state_dir = state_dir
        self.kind = kind
        self.port = free_port()
        self.api_url = f"http://127.0.0.1:{self.port}"
        self.output_path = state_dir / "stdout.txt"
        env = {
            **os.environ,
            "HOOKLINE_DEV_PORT": str(self.port),
            "HOOKLINE_DEV_REDIS_PORT": str(free_port()),
            "HOOKLINE_DEV_AWS_PORT": str(free_port()),
            "HOOKLINE_DEV_DIR": str(state_dir),
            "PYTHONUNBUFFERED": "1",
            "HOOKLINE_DEV_STACK": kind,
            # One warm API worker, as before warming: more would add their cold starts to every stack's
            # start-up here, and no test sends concurrent first requests.
            "HOOKLINE_DEV_WARM_API_WORKERS": "1",
        }
        # The test session's own endpoint and credentials must not leak into the stack.
        env.pop("HOOKLINE_AWS_ENDPOINT", None)
        state_dir.mkdir(parents=True, exist_ok=True)
        with self.output_path.open("wb") as output:
            self.process = subprocess.Popen(
                [str(HOOKLINE), "dev", *args],
                cwd=REPO,
                env=env,
                stdout=output,
                stderr=subprocess.STDOUT,
                process_group=0,
            )
        self.api_key = ""
        self.pids: dict[str, int] = {}

    @property
    def output(self) -> str:
        """Returns everything the stack printed so far."""
        return self.output_path.read_text(encoding="utf-8", errors="replace")

    @property
    def env_file(self) -> Path:
        """Returns the dev.env the stack writes."""
        return self.state_dir / "dev.env"

    def wait_ready(self) -> None:
        """Waits for the start-up banner and reads the key and pids from it."""
        end = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < end:
            text = self.output
            if "API key" in text and self.env_file.exists():
                key = re.search(r"API key\s+(hl_\S+)", text)
                assert key is not None, text
                self.api_key = key.group(1)
                self.pids = _pids(text)
                return
            if self.process.poll() is not None:
                raise AssertionError(f"hookline dev exited with {self.process.returncode}:\n{text}")
            time.sleep(0.1)
        raise AssertionError(f"hookline dev printed no key within {START_TIMEOUT_S} s:\n{self.output}")

    def cli(self, *args: str) -> str:
        """Runs `hookline ARGS` with dev.env loaded, as the README shows; returns its stdout."""
        command = f"set -a; . {shlex.quote(str(self.env_file))}; set +a; {shlex.quote(str(HOOKLINE))} "
        result = subprocess.run(
            ["bash", "-c", command + shlex.join(args)],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    def environment(self) -> dict[str, str]:
        """Returns the variables dev.env sets."""
        found = {}
        for line in self.env_file.read_text(encoding="utf-8").splitlines():
            name, equals, value = line.partition("=")
            if equals and not name.startswith("#"):
                found[name] = shlex.split(value)[0] if value else ""
        return found

    def stop(self, signum: int = signal.SIGINT, group: bool = False) -> int:
        """Sends signum (to the whole process group, as a terminal does, when group) and waits for the
        process to exit; returns its exit code."""
        if self.process.poll() is None:
            if group:
                os.killpg(self.process.pid, signum)
            else:
                self.process.send_signal(signum)
        try:
            return self.process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.kill()
            raise

    def kill(self) -> None:
        """Kills the stack and every child it printed (the last resort of a failed test)."""
        for name, pid in self.pids.items():
            with contextlib.suppress(ProcessLookupError):
                # The emulator leads a process group with its Lambda workers in it.
                (os.killpg if name == "emulator" else os.kill)(pid, signal.SIGKILL)
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=STOP_TIMEOUT_S)

    def __enter__(self) -> DevStack:
        try:
            self.wait_ready()
        except BaseException:
            self.kill()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.process.poll() is None:
            self.kill()


def _pids(text: str) -> dict[str, int]:
    """Reads "(pid N)", "(redis pid N)", "(moto pid N)" and "(emulator pid N)" from the banner."""
    found = {"hookline dev": int(re.search(r"running \(pid (\d+)\)", text).group(1))}  # type: ignore[union-attr]
    for name in ("redis", "moto", "emulator"):
        match = re.search(rf"{name} pid (\d+)", text)
        if match:
            found[name] = int(match.group(1))
    return found


def process_exists(pid: int) -> bool:
    """Tells whether a process with this id exists (a zombie counts as gone: it runs nothing)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    if status.exists():
        return "\nState:\tZ" not in status.read_text()
    return True


def assert_stops_cleanly(stack: DevStack, signum: int, group: bool) -> None:
    """Signals the stack and checks that it exits 0 with no traceback, leaving no process behind."""
    started = [stack.process.pid, *descendants(stack.process.pid)]

    assert stack.stop(signum, group=group) == 0, stack.output

    # A descendant may be reparented and exit just after `hookline dev` does: wait for it, briefly.
    end = time.monotonic() + 5
    while time.monotonic() < end and any(process_exists(pid) for pid in started):
        time.sleep(0.05)
    left = {pid: _command(pid) for pid in started if process_exists(pid)}
    assert left == {}
    assert "stopped" in stack.output
    assert "Traceback" not in stack.output, stack.output
    assert "KeyboardInterrupt" not in stack.output, stack.output
    assert not stack.env_file.exists()


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "?"


def descendants(pid: int) -> list[int]:
    """Returns every live descendant of pid (the emulator's Lambda workers, the API sandboxes)."""
    children: dict[int, list[int]] = {}
    for status in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = status.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(status.parent.name))
    found, pending = [], [pid]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found
