"""Starts the embedded AWS emulator (ministack, from .venv-emu) on loopback, as a child process.

ministack pins botocore and, through aws-sam-translator, pydantic below what Hookline resolves, so it runs
from its own virtualenv (`make install` creates .venv-emu). It runs Python Lambdas as warm worker
subprocesses of that virtualenv's Python: that interpreter is the deployed functions' runtime.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from hookline_local import ministack_main
from hookline_local.services import ChildProcess, ServiceError, _http_answers, _wait_until
from hookline_local.template import find_template

EMULATOR_PYTHON_ENV = "HOOKLINE_EMULATOR_PYTHON"
# Set to 1: run ministack as released, without hookline_local/ministack_main.py's workaround (to measure it,
# or should a newer ministack break it).
EMULATOR_STOCK_ENV = "HOOKLINE_EMULATOR_STOCK"
HEALTH_PATH = "/_localstack/health"
# Variables of ours that must not reach the emulator: it hands its own environment to every Lambda worker
# it spawns, and a deployed function must see only what the template gives it.
_PRIVATE_PREFIXES = ("HOOKLINE_", "POWERTOOLS_", "AWS_", "PYTHONPATH", "VIRTUAL_ENV")


def emulator_python() -> Path:
    """Returns the Python of the emulator's virtualenv (HOOKLINE_EMULATOR_PYTHON overrides it).

    Raises:
        ServiceError: It does not exist (`make install` was not run).
    """
    configured = os.environ.get(EMULATOR_PYTHON_ENV)
    python = Path(configured) if configured else find_template().parent / ".venv-emu" / "bin" / "python"
    if not python.exists():
        raise ServiceError(f"the AWS emulator's Python {python} is missing: run `make install` first")
    return python


def python_version(python: Path) -> str:
    """Returns "major.minor" of an interpreter: the version the layer's wheels must be built for."""
    done = subprocess.run(
        [str(python), "-c", "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return done.stdout.strip()


def emulator_environment(port: int, scratch_dir: Path) -> dict[str, str]:
    """Returns the emulator's environment: ours without our own settings, plus where it listens.

    Its temporary files (each Lambda worker's unpacked code and layer, ~30 MB) go to scratch_dir, which
    the stack empties on start and stop: a worker killed with the emulator leaves its directory behind.
    """
    env = {name: value for name, value in os.environ.items() if not name.startswith(_PRIVATE_PREFIXES)}
    env.update(
        {
            "GATEWAY_PORT": str(port),
            "BIND_HOST": "127.0.0.1",
            "MINISTACK_HOST": "127.0.0.1",
            "MINISTACK_REGION": "us-east-1",
            "LOG_LEVEL": os.environ.get("HOOKLINE_EMULATOR_LOG_LEVEL", "WARNING"),
            # Fake credentials for the emulator's own clients; no real account is ever reached.
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "PYTHONUNBUFFERED": "1",
            "TMPDIR": str(scratch_dir),
        }
    )
    return env


def scratch_dir(log_path: Path) -> Path:
    """Returns the emulator's temporary directory, beside its log."""
    return log_path.parent / "emulator-tmp"


def discard_scratch(log_path: Path) -> None:
    """Removes the emulator's scratch directory without waiting for it.

    It holds an unpacked layer per Lambda worker ever started (thousands of files each): removing it can
    take long on a busy disk, and Ctrl-C must not wait for that. It is renamed at once and removed by a
    detached `rm`; whatever is left is removed at the next start.
    """
    scratch = scratch_dir(log_path)
    if not scratch.exists():
        return
    doomed = scratch.with_name(f"{scratch.name}.old-{os.getpid()}")
    scratch.rename(doomed)
    subprocess.Popen(
        ["rm", "-rf", str(doomed)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def start_emulator(
    port: int, log_path: Path, python: Path | None = None, stock: bool | None = None
) -> ChildProcess:
    """Starts ministack on 127.0.0.1:port and waits until its health endpoint answers.

    It runs through hookline_local/ministack_main.py, which works around a defect of its DynamoDB (an
    expression parsed again for every item a Query reads); stock=True runs `python -m ministack` as
    released, for measuring the difference (bench/emulator_dynamodb.py); by default HOOKLINE_EMULATOR_STOCK=1
    asks for that.
    """
    if stock is None:
        stock = os.environ.get(EMULATOR_STOCK_ENV) == "1"
    interpreter = python or emulator_python()
    scratch = scratch_dir(log_path)
    for left in scratch.parent.glob(f"{scratch.name}*"):
        shutil.rmtree(left, ignore_errors=True)  # a previous run's, if its removal did not finish
    scratch.mkdir(parents=True)
    child = ChildProcess(
        "emulator",
        [str(interpreter), "-m", "ministack"] if stock else [str(interpreter), ministack_main.__file__],
        log_path,
        env=emulator_environment(port, scratch),
        whole_group=True,
    )
    url = f"http://127.0.0.1:{port}{HEALTH_PATH}"
    _wait_until(child, lambda: _http_answers(url), f"the AWS emulator (see {log_path})")
    return child
