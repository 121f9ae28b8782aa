"""A SIGKILLed executor's job is delivered again within 15 s, with the production timings.

The doomed executor is a real process, killed while its callback is in flight. No reaper runs: recovery
must come from the surviving executors' own loops. Real clocks, real redis-server, moto, a loopback receiver.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hookline.domain.models import ExecutionOutcome, JobRequest, JobStatus
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container
from tests.support.receiver import Receiver, Reply
from tests.support.stack import running_loops, wait_until

pytestmark = pytest.mark.integration

TENANT = "acme"
REPOSITORY = Path(__file__).resolve().parents[2]
RECOVERY_TARGET_MS = 15_000


def production_timing(settings: Settings) -> Settings:
    """Returns settings with the deployed lease, heartbeat and recovery timings (tests use shorter ones)."""
    defaults = Settings()
    return dataclasses.replace(
        settings,
        lease_ms=defaults.lease_ms,
        lease_margin_ms=defaults.lease_margin_ms,
        lease_renew_below_ms=defaults.lease_renew_below_ms,
        heartbeat_ms=defaults.heartbeat_ms,
        redeliver_after_ms=defaults.redeliver_after_ms,
        recover_every_ms=defaults.recover_every_ms,
    )


def executor_environment(settings: Settings) -> dict[str, str]:
    """Returns the environment of an executor process for settings (the timings left at their defaults)."""
    assert settings.aws_endpoint_url is not None
    return {
        **os.environ,
        "HOOKLINE_REDIS_URL": settings.redis_url,
        "HOOKLINE_JOBS_TABLE": settings.jobs_table,
        "HOOKLINE_EXECUTIONS_TABLE": settings.executions_table,
        "HOOKLINE_API_KEYS_TABLE": settings.api_keys_table,
        "HOOKLINE_AWS_ENDPOINT": settings.aws_endpoint_url,
        "HOOKLINE_ALLOW_LOOPBACK": "true",
    }


@pytest.fixture
def doomed_executor(settings: Settings) -> Iterator[subprocess.Popen[bytes]]:
    """Yields an executor process (killed at the end if the test did not)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.executor_process", "45"],
        cwd=REPOSITORY,
        env=executor_environment(settings),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    yield process
    if process.poll() is None:
        process.kill()
    process.wait(timeout=10)


def test_given_executor_killed_during_a_callback_when_others_run_then_the_job_is_delivered_again_within_15_s(
    settings: Settings, receiver: Receiver, doomed_executor: subprocess.Popen[bytes]
) -> None:
    receiver.script("/hook", [Reply(200, delay_s=40)])  # the first attempt never answers in time
    survivors = Container(production_timing(settings), consumer="surviving-executor")
    try:
        request = JobRequest.model_validate({"url": receiver.url("/hook"), "body": "x"})  # 30 s timeout
        job_id = survivors.submitter.submit(TENANT, request).job.job_id
        receiver.wait_for(1, timeout_s=20)  # the doomed process started and is in its callback
        killed_ms = survivors.clock.now_ms()
        doomed_executor.send_signal(signal.SIGKILL)
        doomed_executor.wait(timeout=10)

        with running_loops(survivors, max_runtime_s=RECOVERY_TARGET_MS / 1000 + 10):
            first, again = receiver.wait_for(2, timeout_s=RECOVERY_TARGET_MS / 1000 + 5)
            wait_until(lambda: survivors.jobs.get(TENANT, job_id).status is JobStatus.SUCCEEDED, 5)

        recovered_ms = again.received_ms - killed_ms
        print(f"killed executor's job delivered again {recovered_ms} ms after SIGKILL")
        assert recovered_ms <= RECOVERY_TARGET_MS
        assert [r.headers["hookline-attempt"] for r in (first, again)] == ["1", "2"]
        executions = survivors.jobs.executions(TENANT, job_id)
        assert [(e.attempt, e.outcome) for e in executions] == [
            (1, ExecutionOutcome.LEASE_EXPIRED),
            (2, ExecutionOutcome.SUCCEEDED),
        ]
    finally:
        survivors.close()
