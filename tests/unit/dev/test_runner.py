"""The local runner takes functions and schedules from template.yaml and bounds fan-out."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from hookline.domain import constants
from hookline_local.runtime import FunctionSpec, LambdaFunction, SandboxPool, function_spec
from hookline_local.scheduler import Scheduler, Timer
from hookline_local.stack import StackOptions, execute_function_id, stack_environment
from hookline_local.template import find_template, load_template

TEMPLATE_PATH = find_template()


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template(TEMPLATE_PATH)


def test_given_template_when_finding_the_fan_out_target_then_it_is_the_execute_function(
    template: dict[str, Any],
) -> None:
    assert execute_function_id(template) == "ExecuteFunction"


def test_given_execute_function_when_specced_then_its_context_outlasts_the_executor_reserve(
    template: dict[str, Any],
) -> None:
    spec = function_spec(template, TEMPLATE_PATH.parent, "ExecuteFunction", "us-east-1", Path("log"))
    function = LambdaFunction(spec.function_id, lambda event, context: None, spec.timeout_s, spec.memory_mb)

    remaining_ms = function.context().get_remaining_time_in_millis()

    # functions/execute/app.py claims only while remaining time exceeds the longest callback + wrap-up.
    reserve_ms = (constants.MAX_TIMEOUT_S + constants.ATTEMPT_WRAP_UP_S) * 1000
    assert spec.handler_file == "functions/execute/app.py"
    assert spec.memory_mb == 1024
    assert remaining_ms - reserve_ms > 60_000


def test_given_options_when_building_the_environment_then_it_points_at_the_local_services() -> None:
    env = stack_environment(StackOptions(redis_port=7001, aws_port=7002), "http://127.0.0.1:7002")

    assert env["HOOKLINE_REDIS_URL"] == "redis://127.0.0.1:7001/0"
    assert env["HOOKLINE_AWS_ENDPOINT"] == "http://127.0.0.1:7002"
    assert env["HOOKLINE_ALLOW_LOOPBACK"] == "true"
    assert env["AWS_ACCESS_KEY_ID"] == "testing"


class _BlockingHandler:
    """A handler whose invocations run until released."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = threading.Semaphore(0)

    def __call__(self, event: dict[str, Any], context: Any) -> None:
        self.started.release()
        self.release.wait(5)


def test_given_max_executors_when_fanning_out_then_no_more_than_the_bound_run() -> None:
    handler = _BlockingHandler()
    executor = LambdaFunction("ExecuteFunction", handler, 420)
    reports: list[str] = []
    scheduler = Scheduler([], executor, max_executors=3, report=reports.append)
    try:
        first = scheduler.launch(2)
        second = scheduler.launch(5)
        for _ in range(3):
            assert handler.started.acquire(timeout=5)
        assert (first, second) == (2, 1)
        assert scheduler.running("ExecuteFunction") == 3
        assert reports[-1] == "fan-out: started 1 more executor(s); 3 running"
    finally:
        scheduler.stop()
        handler.release.set()


def test_given_timer_when_started_then_it_invokes_at_once_and_stops_on_request() -> None:
    handler = _BlockingHandler()
    handler.release.set()
    reaper = LambdaFunction("ReapFunction", handler, 60)
    scheduler = Scheduler([Timer(reaper, 60)], reaper, max_executors=1)

    scheduler.start()
    try:
        assert handler.started.acquire(timeout=5)
    finally:
        scheduler.stop()

    assert scheduler.invoke(reaper, {}) is False


def test_given_a_sandbox_pool_when_warmed_then_every_sandbox_is_started_before_any_request(
    tmp_path: Path,
) -> None:
    (tmp_path / "app.py").write_text("import os\n\ndef handler(event, context):\n    return os.getpid()\n")
    spec = FunctionSpec("Probe", tmp_path, "app.py", "handler", 10.0, 128, "us-east-1", tmp_path / "log")
    pool = SandboxPool(spec, size=2)
    try:
        pool.warm()
        started = pool.pids()
        answered_by = pool.invoke({})
    finally:
        pool.close()

    assert len(set(started)) == 2
    assert answered_by in started
