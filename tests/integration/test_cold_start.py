"""A cold start during a DynamoDB outage: importing an engine function must not fail (Lambda would end the
invocation before it began); its start-up checks wait for DynamoDB inside the invocation instead."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.aws import FAKE_CREDENTIALS
from tests.support.redis_server import free_port

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
IMPORT_TIMEOUT_S = 60.0
# Imports each engine function's module as Lambda's runtime does, then invokes the reaper with 2 s left.
SCRIPT = """
import sys
from hookline_local.runtime import LocalContext, load_handler
from hookline_local.template import find_template
template_dir = find_template().parent
handlers = {
    name: load_handler(template_dir, f"functions/{name}/app.py", "handler", f"cold_{name}")
    for name in ("promote", "execute", "reap")
}
print("imported", flush=True)
try:
    handlers["reap"]({}, LocalContext("reap", 5.0, 256, "us-east-1"))
except Exception as error:
    print("invocation failed:", type(error).__name__, flush=True)
"""


def test_given_dynamodb_unreachable_when_engine_functions_cold_start_then_import_succeeds() -> None:
    env = {
        **os.environ,
        **FAKE_CREDENTIALS,
        "HOOKLINE_AWS_ENDPOINT": f"http://127.0.0.1:{free_port()}",  # nothing listens there
        "HOOKLINE_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0",
        "POWERTOOLS_SERVICE_NAME": "hookline",
        "POWERTOOLS_METRICS_NAMESPACE": "Hookline",
        "POWERTOOLS_METRICS_DISABLED": "true",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": "CRITICAL",
        "PYTHONPATH": str(REPO),
    }

    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=IMPORT_TIMEOUT_S,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[0] == "imported"
    # The invocation waited for DynamoDB until its deadline (5 s less the safety margin), then gave up.
    assert done.stdout.splitlines()[1] == "invocation failed: EndpointConnectionError"
