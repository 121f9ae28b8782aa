"""`hookline dev`: runs the whole stack locally in one terminal until Ctrl-C (or SIGTERM)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

from hookline_local.deploy import DeployError
from hookline_local.deployed import DEFAULT_WARM_API_WORKERS, DeployedOptions, DeployedStack
from hookline_local.development import DEV_TENANT
from hookline_local.services import ServiceError
from hookline_local.sink import SINK_PATH
from hookline_local.stack import LocalStack, StackOptions

# Once asked to stop, `hookline dev` exits within this long (stop_within); tests/e2e waits this plus slack.
STOP_BUDGET_S = 10.0
# How often the main thread wakes while it waits for a stop signal.
SIGNAL_POLL_S = 0.5


def add_dev_commands(commands: Any) -> None:
    """Adds `dev` to the top-level parser's subcommands."""
    defaults = StackOptions()
    env = os.environ
    dev = commands.add_parser(
        "dev",
        help="deploy template.yaml on the embedded AWS emulator, API on 127.0.0.1 (Ctrl-C stops it)",
        description=__doc__,
    )
    dev.add_argument("--port", type=int, default=int(env.get("HOOKLINE_DEV_PORT", defaults.port)))
    dev.add_argument(
        "--redis-port", type=int, default=int(env.get("HOOKLINE_DEV_REDIS_PORT", defaults.redis_port))
    )
    dev.add_argument(
        "--aws-port",
        type=int,
        default=int(env["HOOKLINE_DEV_AWS_PORT"]) if env.get("HOOKLINE_DEV_AWS_PORT") else None,
        help="the AWS emulator's port (4566; moto's 5055 with --hand-wired); ignored when "
        "HOOKLINE_AWS_ENDPOINT names another endpoint, e.g. LocalStack",
    )
    dev.add_argument(
        "--hand-wired",
        action="store_true",
        default=env.get("HOOKLINE_DEV_STACK") == "hand-wired",
        help="run the previous stack instead: the functions imported in-process behind a hand-written "
        "gateway and timers, on moto (HOOKLINE_DEV_STACK=hand-wired)",
    )
    dev.add_argument(
        "--parameter",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a template parameter for the deployment, e.g. ApiRateLimitPerS=1000 (repeatable)",
    )
    dev.add_argument(
        "--refuse-loopback",
        action="store_true",
        help="refuse callbacks to loopback and private addresses, as in AWS (AllowLoopback=false); "
        "the request bin then receives nothing",
    )
    dev.add_argument(
        "--state-dir",
        type=Path,
        default=Path(env.get("HOOKLINE_DEV_DIR", defaults.state_dir)),
        help="where redis' directory, logs and dev.env go (default: .hookline/ in the project)",
    )
    dev.add_argument(
        "--max-executors",
        type=int,
        default=defaults.max_executors,
        help="execute invocations running at once, all started by the promoter",
    )
    dev.add_argument(
        "--api-sandboxes",
        type=int,
        default=defaults.api_sandboxes,
        help="worker processes serving API requests, one request each at a time (Lambda sandboxes)",
    )
    dev.add_argument(
        "--warm-api-workers",
        type=int,
        default=int(env.get("HOOKLINE_DEV_WARM_API_WORKERS", DEFAULT_WARM_API_WORKERS)),
        help="API function workers the deployed stack starts before it is ready, so that many concurrent "
        "first requests meet no cold start (HOOKLINE_DEV_WARM_API_WORKERS)",
    )
    dev.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    # The stack sends what the functions print to its log; this command's own output stays here.
    console = sys.stdout

    def report(line: str) -> None:
        print(line, file=console, flush=True)

    stack: LocalStack | DeployedStack
    endpoint = os.environ.get("HOOKLINE_AWS_ENDPOINT") or None
    if args.hand_wired:
        stack = LocalStack(
            StackOptions(
                port=args.port,
                redis_port=args.redis_port,
                aws_port=args.aws_port or StackOptions.aws_port,
                aws_endpoint=endpoint,
                state_dir=args.state_dir.resolve(),
                max_executors=args.max_executors,
                api_sandboxes=args.api_sandboxes,
                allow_loopback=not args.refuse_loopback,
            ),
            report=report,
        )
    else:
        stack = DeployedStack(
            DeployedOptions(
                port=args.port,
                redis_port=args.redis_port,
                aws_port=args.aws_port or DeployedOptions.aws_port,
                aws_endpoint=endpoint,
                state_dir=args.state_dir.resolve(),
                allow_loopback=not args.refuse_loopback,
                parameters=dict(_parameter(text) for text in args.parameter),
                warm_api_workers=args.warm_api_workers,
            ),
            report=report,
        )
    stop = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    # Installed before anything starts: a Ctrl-C during start-up stops the stack once it is up, with no
    # KeyboardInterrupt raised in the middle of a deployment.
    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    print("starting the Hookline local stack ...", file=console, flush=True)
    try:
        stack.start()
    except (ServiceError, DeployError) as error:
        print(f"hookline dev: {error}", file=sys.stderr, flush=True)
        return 1
    text = banner(stack) if isinstance(stack, LocalStack) else deployed_banner(stack)
    print(text, file=console, flush=True)
    # The handler runs in this thread between waits: a bounded wait cannot sleep through a signal.
    while not stop.wait(SIGNAL_POLL_S):
        pass
    print("stopping ...", file=console, flush=True)
    stop_within(stack, STOP_BUDGET_S, report)
    return 0


class Stoppable(Protocol):
    """A running stack: stopped in order, or killed outright."""

    def stop(self) -> None:
        """Stops everything in order, waiting for each process."""
        ...

    def kill(self) -> None:
        """SIGKILLs every process without waiting."""
        ...


def stop_within(
    stack: Stoppable,
    budget_s: float,
    report: Callable[[str], None],
    exit_process: Callable[[int], None] = os._exit,
) -> None:
    """Stops the stack and ends the process within budget_s, whatever the orderly stop does meanwhile.

    Each step of stop() waits for a process with a timeout of its own, and on a loaded machine those add up;
    past budget_s whatever still runs is SIGKILLed and the process exits. It exits with os._exit either
    way: invocations cannot be cancelled (nor can Lambda's), and their threads end with the process
    instead of holding its exit until their callbacks time out.
    """

    def overran() -> None:
        stack.kill()
        report(f"stopped (the orderly stop overran {budget_s:g} s: killed what was left)")
        _flush_output()
        exit_process(0)

    watchdog = threading.Timer(budget_s, overran)
    watchdog.daemon = True
    watchdog.start()
    stack.stop()
    watchdog.cancel()
    report("stopped")
    _flush_output()
    exit_process(0)


def _flush_output() -> None:
    sys.stdout.flush()
    sys.stderr.flush()


def banner(stack: LocalStack) -> str:
    """Returns the start-up text: what runs where, the development key, and a request to try."""
    options, pids = stack.options, stack.pids
    env_file = _shown_path(stack.env_file)
    job = json.dumps({"url": f"{stack.api_url}{SINK_PATH}", "body": {"hello": "world"}, "delay_s": 2})
    timers = ", ".join(f"{function_id} every {rate_s} s" for function_id, rate_s in stack.timers)
    aws = stack.environment["HOOKLINE_AWS_ENDPOINT"]
    aws_pid = f"moto pid {pids['moto']}" if "moto" in pids else "external endpoint"
    return f"""
Hookline local stack is running (pid {pids["hookline dev"]}); Ctrl-C stops it.

  API        {stack.api_url}  ({stack.route_count} routes from template.yaml, request bin at {SINK_PATH})
  dashboard  {stack.api_url}/dashboard  (sign in with the API key below)
  Redis      {stack.environment["HOOKLINE_REDIS_URL"]}  (redis pid {pids["redis"]})
  AWS        {aws}  ({aws_pid}; tables from template.yaml)
  timers     {timers}; fan-out up to {options.max_executors} executors

  tenant          {DEV_TENANT}
  API key         {stack.api_key}
  signing secret  {stack.signing_secret}
  environment     {env_file}  (for the CLI: set -a; . {env_file}; set +a; hookline keys list)
  function logs   {_shown_path(stack.function_log)}

Schedule a callback to the request bin, 2 s from now:

  curl -s {stack.api_url}/v1/jobs -H 'Authorization: Bearer {stack.api_key}' \\
    -H 'Content-Type: application/json' -d '{job}'

See it arrive (with "signature_valid": true):

  curl -s {stack.api_url}{SINK_PATH}
"""


def _parameter(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise SystemExit(f"hookline dev: --parameter takes NAME=VALUE, not {text!r}")
    return name, value


def deployed_banner(stack: DeployedStack) -> str:
    """Returns the start-up text of the deployed stack: the stack's own outputs, the key, a request."""
    assert stack.deployed is not None
    deployed, pids = stack.deployed, stack.pids
    env_file = _shown_path(stack.env_file)
    job = json.dumps({"url": f"{stack.api_url}{SINK_PATH}", "body": {"hello": "world"}, "delay_s": 2})
    emulator = f"emulator pid {pids['emulator']}" if "emulator" in pids else "external endpoint"
    loopback = "refused (--refuse-loopback)" if not stack.options.allow_loopback else "allowed"
    functions = ", ".join(sorted(deployed.functions.values()))
    return f"""
Hookline is running (pid {pids["hookline dev"]}), deployed from template.yaml as stack \
{deployed.stack_name} in {stack.started_in_s:.1f} s; Ctrl-C stops it.

  ApiUrl     {deployed.outputs["ApiUrl"]}  (the stack's output)
  on AWS emulation  {deployed.api_url}
  API        {stack.api_url}  (forwards to it; request bin at {SINK_PATH})
  dashboard  {stack.api_url}/dashboard  (sign in with the API key below)
  AWS        {stack.environment["HOOKLINE_AWS_ENDPOINT"]}  ({emulator}; log {_shown_path(stack.emulator_log)})
  Redis      {stack.environment["HOOKLINE_REDIS_URL"]}  (redis pid {pids["redis"]}; RedisUrlOverride)
  functions  {functions}
  loopback callbacks {loopback}

  tenant          {DEV_TENANT}
  API key         {stack.api_key}
  signing secret  {stack.signing_secret}
  environment     {env_file}  (for the CLI: set -a; . {env_file}; set +a; hookline keys list)

Schedule a callback to the request bin, 2 s from now:

  curl -s {stack.api_url}/v1/jobs -H 'Authorization: Bearer {stack.api_key}' \\
    -H 'Content-Type: application/json' -d '{job}'

See it arrive (with "signature_valid": true):

  curl -s {stack.api_url}{SINK_PATH}
"""


def _shown_path(path: Path) -> str:
    """Returns path relative to the working directory when it lies below it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
