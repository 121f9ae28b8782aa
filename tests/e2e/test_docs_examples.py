"""Every shell and Python block of the README and the docs pages, run against the local stack as pasted.

Each page runs in a shell of its own, its blocks in order (a later block uses what an earlier one set), in a
scratch directory that looks like a checkout beside a running `make run`: `.venv`, `.hookline` (the stack's
state, with dev.env), `docs` and `examples` link to the real ones. `curl` fails on an HTTP error answer
(`--fail-with-body`), so an example that gets a 404 or a 409 fails its page. The receivers of the receivers
page verify a real callback and refuse a forged one: Python always, Node when `node` is installed, Go when
`go` is (skipped otherwise, saying so).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.docs.pages import PAGES, REPO, runnable
from tests.e2e.dev_stack import DevStack
from tests.support.redis_server import free_port
from tests.support.stack import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

PAGE_TIMEOUT_S = 120
# The receivers page's example listens on 8001; the tests give it a free port instead.
EXAMPLE_PORT = "8001"
SNIPPETS = REPO / "docs" / "snippets"
COPIES = {"README.md": "docs/getting-started.md"}
LOAD_ENV = "set -a; . .hookline/dev.env; set +a"
# Pages whose first example submits $JOB_ID to the request bin: the test checks that it arrived, signed.
FIRST_JOB_PAGES = frozenset({"docs/getting-started.md"})


@pytest.fixture(scope="module")
def checkout(deployed_stack: DevStack, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scratch directory with the checkout's .venv, docs and examples and the stack's .hookline."""
    scratch = tmp_path_factory.mktemp("checkout")
    for name, target in {
        ".venv": Path(sys.executable).parents[1],
        ".hookline": deployed_stack.state_dir,
        "docs": REPO / "docs",
        "examples": REPO / "examples",
    }.items():
        (scratch / name).symlink_to(target)
    shims = scratch / "bin"
    shims.mkdir()
    curl = shutil.which("curl")
    assert curl is not None, "curl is needed to run the examples"
    (shims / "curl").write_text(f'#!/bin/sh\nexec {curl} --fail-with-body "$@"\n', encoding="utf-8")
    (shims / "curl").chmod(0o755)
    return scratch


def _environment(checkout: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOOKLINE_", "AWS_"))}
    return {**env, "PATH": f"{checkout / 'bin'}{os.pathsep}{env.get('PATH', '')}", "PYTHONUNBUFFERED": "1"}


def _run(
    command: list[str], checkout: Path, script: str, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, input=script, cwd=checkout, env=env, capture_output=True, text=True, timeout=PAGE_TIMEOUT_S,
        check=False,
    )  # fmt: skip


@pytest.mark.parametrize("page", PAGES)
def test_given_a_running_stack_when_a_pages_shell_blocks_run_in_order_then_each_succeeds(
    page: str, checkout: Path, deployed_stack: DevStack
) -> None:
    code = [block.code for block in runnable(page, "sh")]
    if page in COPIES:
        # The README repeats blocks of the getting-started page word for word: those run there, all but
        # the line that loads dev.env, which later blocks of the README rely on as a reader's shell would.
        elsewhere = {block.code for block in runnable(COPIES[page], "sh")}
        code = [text if text not in elsewhere else LOAD_ENV for text in code]
    if not code:
        pytest.skip(f"{page} has no shell block of its own to run")
    port = str(free_port())
    script = "set -euo pipefail\n" + "\n".join(code).replace(EXAMPLE_PORT, port)
    if page in FIRST_JOB_PAGES:
        script += '\nprintf "\\nJOB_ID=%s\\n" "$JOB_ID"\n'

    result = _run(["bash", "-s"], checkout, script, _environment(checkout))

    assert result.returncode == 0, f"{page}:\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
    assert "Traceback" not in result.stderr, result.stderr
    if page in FIRST_JOB_PAGES:
        _assert_in_request_bin(deployed_stack, result.stdout.rsplit("JOB_ID=", 1)[1].strip())


def _assert_in_request_bin(stack: DevStack, job_id: str) -> None:
    """The first example's callback reached the request bin, signed, with the body it was given."""

    def arrived() -> list[dict[str, object]]:
        listed = httpx.get(f"{stack.api_url}/dev/sink", timeout=10).json()["requests"]
        return [r for r in listed if r["headers"].get("webhook-id") == job_id]

    wait_until(arrived, timeout_s=30, interval_s=0.5)
    [callback] = arrived()
    assert callback["signature_valid"] is True
    assert json.loads(str(callback["body"])) == {"hello": "world"}


@pytest.mark.parametrize("page", PAGES)
def test_given_a_running_stack_when_a_pages_python_blocks_run_then_each_succeeds(
    page: str, checkout: Path, deployed_stack: DevStack
) -> None:
    code = [block.code for block in runnable(page, "python")]
    if not code:
        pytest.skip(f"{page} has no Python block to run")
    env = {**_environment(checkout), **deployed_stack.environment()}

    for block in code:
        result = _run([str(checkout / ".venv" / "bin" / "python"), "-"], checkout, block, env)

        assert result.returncode == 0, f"{page}:\n{block}\n--- stderr\n{result.stderr}"


RECEIVERS = {
    "python": [str(Path(sys.executable)), str(SNIPPETS / "receiver.py")],
    "node": ["node", str(SNIPPETS / "receiver.js")],
    "go": ["go", "run", str(SNIPPETS / "receiver.go")],
}


@pytest.fixture(params=sorted(RECEIVERS))
def receiver(
    request: pytest.FixtureRequest, deployed_stack: DevStack
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """One receiver snippet, listening on a free port with the stack's signing secret."""
    command = RECEIVERS[request.param]
    if shutil.which(command[0]) is None:
        pytest.skip(f"`{command[0]}` is not installed: the {request.param} receiver snippet is not run here")
    port = free_port()
    env = {
        **os.environ,
        "PORT": str(port),
        "HOOKLINE_SIGNING_SECRET": deployed_stack.environment()["HOOKLINE_SIGNING_SECRET"],
    }
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}/hooks/hookline"

    def listening() -> bool:
        try:
            httpx.post(url, content=b"{}", timeout=2)
        except httpx.TransportError:
            assert process.poll() is None, process.stdout.read() if process.stdout else ""
            return False
        return True

    try:
        wait_until(listening, timeout_s=60, interval_s=0.2)  # `go run` compiles first
        yield url, process
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_given_a_receiver_snippet_when_a_job_calls_it_then_it_verifies_the_callback_and_refuses_a_forgery(
    receiver: tuple[str, subprocess.Popen[str]], deployed_stack: DevStack
) -> None:
    url, process = receiver
    headers = {"Authorization": f"Bearer {deployed_stack.api_key}"}
    with httpx.Client(base_url=deployed_stack.api_url, headers=headers, timeout=10) as api:
        submitted = api.post("/v1/jobs", json={"url": url, "body": {"order": 42}, "max_attempts": 1})
        assert submitted.status_code == 201, submitted.text
        job_id = submitted.json()["id"]
        wait_until(
            lambda: api.get(f"/v1/jobs/{job_id}").json()["status"] in {"succeeded", "dead"}, timeout_s=30
        )
        job = api.get(f"/v1/jobs/{job_id}").json()

    forged = httpx.post(
        url,
        content=b'{"order": 42}',
        headers={
            "webhook-id": job_id,
            "webhook-timestamp": str(int(time.time())),
            "webhook-signature": "v1,Zm9yZ2Vk",
        },
        timeout=10,
    )

    assert job["status"] == "succeeded", job  # a 204: the receiver verified the signature
    assert forged.status_code == 401
    process.terminate()
    output, _ = process.communicate(timeout=10)
    assert f"verified {job_id}" in output
