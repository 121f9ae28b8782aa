"""Plays the Lambda runtime: loads a function's handler from the template and invokes it with a context.

A function runs either in this process (`LambdaFunction`: promote, execute and reap, whose invocations are
meant to overlap and share nothing per request) or in a pool of worker processes (`SandboxPool`: the API
function), each worker one Lambda sandbox that serves one invocation at a time. Powertools' API resolver
keeps the current request in class attributes, as a sandbox may, so two API invocations must never share
a process; separate processes also let them use both cores instead of queueing on one interpreter lock.
"""

from __future__ import annotations

import importlib.util
import multiprocessing
import signal
import sys
import time
import uuid
import warnings
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hookline_local.template import function_handler, function_timeout_s

Handler = Callable[[dict[str, Any], Any], Any]

ACCOUNT_ID = "123456789012"
DEFAULT_MEMORY_MB = 128  # Lambda's default when neither the function nor Globals set MemorySize


class LocalContext:
    """Does what the Lambda context object does for one invocation: names it and counts down its time.

    Attributes mirror the Python runtime's context (Powertools' Logger reads the first four).
    """

    def __init__(self, function_name: str, timeout_s: float, memory_mb: int, region: str) -> None:
        self.function_name = function_name
        self.memory_limit_in_mb = memory_mb
        self.invoked_function_arn = f"arn:aws:lambda:{region}:{ACCOUNT_ID}:function:{function_name}"
        self.aws_request_id = str(uuid.uuid4())
        self.function_version = "$LATEST"
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = f"local/{self.aws_request_id}"
        self.identity = None
        self.client_context = None
        # Monotonic, like the runtime's own deadline: a wall-clock step must not stretch an invocation.
        self._deadline_s = time.monotonic() + timeout_s

    def get_remaining_time_in_millis(self) -> int:
        """Returns the milliseconds left before the function's template Timeout ends this invocation."""
        return max(0, int((self._deadline_s - time.monotonic()) * 1000))


def load_handler(template_dir: Path, handler_file: str, handler_name: str, module_name: str) -> Handler:
    """Imports a function's code file (as Lambda does from its CodeUri) and returns its handler.

    Args:
        template_dir: The directory of template.yaml; handler_file is relative to it.
        handler_file: The code file, e.g. "functions/submit/app.py".
        handler_name: The handler's name inside it, e.g. "handler".
        module_name: A name unique in this process (every function's module is called `app`).

    Returns:
        The handler function.
    """
    path = template_dir / handler_file
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    handler: Handler = getattr(module, handler_name)
    return handler


class LambdaFunction:
    """One template function loaded in this process, invoked with a fresh context each time.

    Overlapping invocations run in threads and share the module, its clients and its use cases: fine for
    handlers that keep no per-request state in globals (promote, execute, reap), not for the API's.
    """

    def __init__(
        self,
        function_id: str,
        handler: Handler,
        timeout_s: float,
        memory_mb: int = DEFAULT_MEMORY_MB,
        region: str = "us-east-1",
        module: Any = None,
    ) -> None:
        self.function_id = function_id
        self.function_name = f"hookline-local-{function_id}"
        self.handler = handler
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.region = region
        self.module = module

    def context(self) -> LocalContext:
        """Returns a new context whose remaining time starts at the function's timeout."""
        return LocalContext(self.function_name, self.timeout_s, self.memory_mb, self.region)

    def invoke(self, event: dict[str, Any]) -> Any:
        """Calls the handler with event and a new context; returns what it returns."""
        return self.handler(event, self.context())


def load_function(spec: FunctionSpec) -> LambdaFunction:
    """Loads one function into this process."""
    module_name = f"hookline_local_{spec.function_id.lower()}"
    handler = load_handler(spec.template_dir, spec.handler_file, spec.handler_name, module_name)
    return LambdaFunction(
        spec.function_id, handler, spec.timeout_s, spec.memory_mb, spec.region, sys.modules[module_name]
    )


@dataclass(frozen=True)
class FunctionSpec:
    """What a sandbox process needs to load one function (picklable: it crosses the process boundary)."""

    function_id: str
    template_dir: Path
    handler_file: str
    handler_name: str
    timeout_s: float
    memory_mb: int
    region: str
    log_path: Path


def function_spec(
    template: Mapping[str, Any], template_dir: Path, function_id: str, region: str, log_path: Path
) -> FunctionSpec:
    """Returns the spec of one template function: its Handler, Timeout and MemorySize."""
    handler_file, handler_name = function_handler(template, function_id)
    properties = {
        **template.get("Globals", {}).get("Function", {}),
        **template["Resources"][function_id].get("Properties", {}),
    }
    return FunctionSpec(
        function_id,
        template_dir,
        handler_file,
        handler_name,
        function_timeout_s(template, function_id),
        int(_default_of(template, properties.get("MemorySize", DEFAULT_MEMORY_MB))),
        region,
        log_path,
    )


def _default_of(template: Mapping[str, Any], value: Any) -> Any:
    """Returns value, or a parameter's default where value is a Ref to one (this stack's parameters are
    the template's defaults)."""
    if isinstance(value, Mapping) and set(value) == {"Ref"}:
        return template["Parameters"][value["Ref"]]["Default"]
    return value


_sandbox: LambdaFunction | None = None


def _start_sandbox(spec: FunctionSpec) -> None:
    """Loads the function in a fresh worker process (its cold start); the environment is inherited."""
    global _sandbox  # noqa: PLW0603 - one function per sandbox process, as in Lambda
    # A terminal's Ctrl-C reaches the whole process group, sandboxes included; they would die printing a
    # KeyboardInterrupt traceback each. `hookline dev` stops them itself (SandboxPool.close).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # What the function prints goes to the stack's function log, as Lambda sends it to CloudWatch Logs.
    sys.stdout = spec.log_path.open("a", encoding="utf-8", buffering=1)
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    module_name = f"hookline_local_{spec.function_id.lower()}"
    handler = load_handler(spec.template_dir, spec.handler_file, spec.handler_name, module_name)
    _sandbox = LambdaFunction(spec.function_id, handler, spec.timeout_s, spec.memory_mb, spec.region)


def _invoke_in_sandbox(event: dict[str, Any]) -> Any:
    assert _sandbox is not None, "the sandbox initializer did not run"
    return _sandbox.invoke(event)


def _warm() -> None:
    """Does nothing; submitting it makes the pool start (cold-start) a worker."""


class SandboxPool:
    """Invokes a function in up to `size` worker processes, started on demand like Lambda sandboxes."""

    def __init__(self, spec: FunctionSpec, size: int) -> None:
        self.function_id = spec.function_id
        self.timeout_s = spec.timeout_s
        self.size = size
        self._pool = ProcessPoolExecutor(
            max_workers=size,
            # Not fork: this process runs threads, and a forked child would inherit their locks.
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_sandbox,
            initargs=(spec,),
        )

    def warm(self) -> None:
        """Starts every sandbox and waits for them, so that load errors show at start-up and no cold
        start lands on a request (the pool starts a worker per task while none is idle)."""
        for started in [self._pool.submit(_warm) for _ in range(self.size)]:
            started.result(timeout=60)

    def invoke(self, event: dict[str, Any]) -> Any:
        """Runs one invocation in a free sandbox; raises TimeoutError past the function's timeout."""
        return self._pool.submit(_invoke_in_sandbox, event).result(timeout=self.timeout_s)

    def pids(self) -> list[int]:
        """Returns the process ids of the sandboxes started so far."""
        return [process.pid for process in self._processes() if process.pid is not None]

    def _processes(self) -> list[Any]:
        return list(self._pool._processes.values())  # the pool has no public way to list them

    def kill(self) -> None:
        """SIGKILLs every sandbox without waiting: a stop's last resort."""
        for process in self._processes():
            process.kill()

    def close(self) -> None:
        """Stops the sandboxes, abandoning invocations still running (as a deleted Lambda would)."""
        processes = self._processes()
        self._pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
        for process in processes:
            process.join(timeout=5)
