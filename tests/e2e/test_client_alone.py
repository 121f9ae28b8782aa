"""hookline-client installed alone: its wheel in a fresh virtualenv, with none of the server's dependencies,
submits a job to the deployed stack, verifies the signed callback and reads the job back; its `hookline`
command lists jobs and offers no operator command."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.dev_stack import REPO, DevStack
from tests.support.receiver import Receiver

# Building the wheel and installing it with httpx, pydantic and rich from the package index takes tens of
# seconds on a loaded machine, before the stack's cold starts.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

SERVER_ONLY = ("hookline ", "hookline-local", "boto3", "botocore", "redis", "aws-lambda-powertools", "moto")

QUICK_START = """
import json, sys, time
from hookline_client import Client, verify

api, key, command, *rest = sys.argv[1:]
with Client(api, key) as hookline:
    if command == "submit":
        job = hookline.submit_job({"url": rest[0], "body": {"order": 42}})
        print("submitted", job.id, job.status)
    else:  # check JOB_ID SECRET BODY_FILE HEADERS_FILE
        job_id, secret, body, headers = rest
        payload = verify(open(body, "rb").read(), json.load(open(headers)), secret)
        print("verified", payload["order"])
        for _ in range(100):
            if hookline.get_job(job_id).status == "succeeded":
                break
            time.sleep(0.2)
        print("status", hookline.get_job(job_id).status)
"""


@pytest.fixture(scope="module")
def client_venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh virtualenv holding only hookline-client[cli] (and what it depends on), from its wheel."""
    root = tmp_path_factory.mktemp("client-alone")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
         "-w", str(root / "dist"), str(REPO / "client")],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    [wheel] = (root / "dist").glob("hookline_client-*.whl")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    subprocess.run(
        [str(venv / "bin/pip"), "install", "--quiet", "--disable-pip-version-check", f"{wheel}[cli]"],
        check=True, capture_output=True, timeout=240,
    )  # fmt: skip
    yield venv


def test_given_only_the_client_wheel_installed_then_no_server_dependency_came_with_it(
    client_venv: Path,
) -> None:
    frozen = subprocess.run(
        [str(client_venv / "bin/pip"), "freeze", "--all"], check=True, capture_output=True, text=True
    ).stdout.lower()
    names = {line.split("==")[0].split(" @ ")[0].strip() for line in frozen.splitlines()}

    assert "hookline-client" in names
    assert not [name for name in names if f"{name} ".startswith(SERVER_ONLY) or name in SERVER_ONLY]


def test_given_only_the_client_installed_when_the_quick_start_runs_against_the_stack_then_it_completes(
    client_venv: Path, deployed_stack: DevStack, tmp_path: Path
) -> None:
    env = deployed_stack.environment()
    created = json.loads(deployed_stack.cli("keys", "create", "--tenant", "client-alone", "--json"))
    api = env["HOOKLINE_STACK_API_URL"]
    with Receiver() as receiver:
        submit = _run(client_venv, api, created["api_key"], "submit", receiver.url("/hook"))
        [callback] = receiver.wait_for(1, timeout_s=60)
        (tmp_path / "body").write_bytes(callback.body)
        (tmp_path / "headers").write_text(json.dumps(dict(callback.headers)))
        job_id = submit.split()[1]
        checked = _run(
            client_venv,
            api,
            created["api_key"],
            "check",
            job_id,
            created["signing_secret"],
            str(tmp_path / "body"),
            str(tmp_path / "headers"),
        )
    listed = subprocess.run(
        [str(client_venv / "bin/hookline"), "jobs", "list", "--json",
         "--api", api, "--key", created["api_key"]],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    operator = subprocess.run(
        [str(client_venv / "bin/hookline"), "keys", "list"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert submit.startswith("submitted ") and submit.split()[2] == "scheduled"
    assert "verified 42" in checked and "status succeeded" in checked
    assert listed.returncode == 0, listed.stderr
    assert job_id in {job["id"] for job in json.loads(listed.stdout)["jobs"]}
    assert operator.returncode == 2 and "invalid choice: 'keys'" in operator.stderr


def _run(venv: Path, *args: str) -> str:
    """Runs the quick start with the client's own interpreter, outside the repository (nothing of the
    server on its path); returns its stdout."""
    result = subprocess.run(
        [str(venv / "bin/python"), "-I", "-c", textwrap.dedent(QUICK_START), *args],
        capture_output=True, text=True, timeout=120, check=False, cwd=venv,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout
