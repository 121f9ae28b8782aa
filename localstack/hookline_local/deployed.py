"""The default local stack: template.yaml deployed onto the embedded AWS emulator, reached on loopback.

redis-server plays ElastiCache (the template's RedisUrlOverride), the emulator (ministack) plays every
AWS service the template uses: CloudFormation with the SAM transform creates the tables, the functions
with their layer, API Gateway, the EventBridge Scheduler schedules and the IAM roles, exactly as in an
account. A loopback forwarder keeps the API at http://127.0.0.1:3000 and serves the request bin there.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hookline.adapters.dynamo.key_store import DynamoKeyStore
from hookline.domain.clock import SystemClock
from hookline.usecases.signing_secrets import SigningSecretProvider
from hookline_local import services
from hookline_local.deploy import Deployed, DeployError, DeployOptions, aws_client, first_tick, read_deployed
from hookline_local.development import DEV_TENANT, REGION, development_key, write_env_file
from hookline_local.emulator import discard_scratch, emulator_python, python_version, start_emulator
from hookline_local.forwarder import Forwarder
from hookline_local.gateway import GatewayServer
from hookline_local.sink import SINK_PATH, RequestBin
from hookline_local.template import find_template, gateway_responses, load_template

STACK_NAME = "hookline"
WARM_TIMEOUT_S = 120.0
# API workers started during deployment: the emulator runs one Lambda worker process per concurrent
# request, so this many concurrent first requests find a warm worker each instead of a cold start.
DEFAULT_WARM_API_WORKERS = 10


@dataclass(frozen=True)
class DeployedOptions:
    """Where the deployed stack listens and keeps its files.

    Attributes:
        port: The forwarder's port on 127.0.0.1 (the API as users reach it).
        redis_port: redis-server's port on 127.0.0.1.
        aws_port: The emulator's port on 127.0.0.1 (unused with aws_endpoint).
        aws_endpoint: A LocalStack-compatible endpoint to deploy to instead of starting the emulator.
        state_dir: Where redis' directory, logs, build artifacts and dev.env go.
        allow_loopback: The template's AllowLoopback: callbacks to 127.0.0.1 (the request bin) allowed.
        install_redis: Whether a missing redis-server may be installed.
        parameters: More template parameters (they win over the stack's own).
        warm_api_workers: API function workers started before the banner (at least 1).
    """

    port: int = 3000
    redis_port: int = 6390
    aws_port: int = 4566
    aws_endpoint: str | None = None
    state_dir: Path = field(default_factory=lambda: find_template().parent / ".hookline")
    allow_loopback: bool = True
    install_redis: bool = True
    parameters: Mapping[str, str] = field(default_factory=dict)
    warm_api_workers: int = DEFAULT_WARM_API_WORKERS


class DeployedStack:
    """The running deployed stack; start() brings it up, stop() takes it down in reverse order."""

    def __init__(self, options: DeployedOptions, report: Callable[[str], None] = print) -> None:
        self.options = options
        self._report = report
        self._children: list[services.ChildProcess] = []
        self._server: GatewayServer | None = None
        self._forwarder: Forwarder | None = None
        self._dynamodb: Any = None
        self.deployed: Deployed | None = None
        self.api_url = f"http://127.0.0.1:{options.port}"
        self.api_key = ""
        self.signing_secret = ""
        self.environment: dict[str, str] = {}
        self.started_in_s = 0.0

    @property
    def env_file(self) -> Path:
        """Returns the file with the variables that point `hookline` commands at this stack."""
        return self.options.state_dir / "dev.env"

    @property
    def emulator_log(self) -> Path:
        """Returns the emulator's own log (deployment and Lambda runtime errors)."""
        return self.options.state_dir / "emulator.log"

    @property
    def pids(self) -> dict[str, int]:
        """Returns the process id of each child service and of this process."""
        return {"hookline dev": os.getpid(), **{child.name: child.pid for child in self._children}}

    def start(self) -> None:
        """Starts everything; on failure stops what had started and re-raises."""
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> None:
        started = time.monotonic()
        options = self.options
        services.require_free_port(options.port, "the API", "--port")
        services.require_free_port(options.redis_port, "redis-server", "--redis-port")
        binary = services.find_redis_server(options.install_redis)
        self._children.append(services.start_redis(binary, options.redis_port, options.state_dir / "redis"))
        endpoint = options.aws_endpoint
        python = emulator_python()
        if endpoint is None:
            services.require_free_port(options.aws_port, "the AWS emulator", "--aws-port")
            self._children.append(start_emulator(options.aws_port, self.emulator_log, python))
            endpoint = f"http://127.0.0.1:{options.aws_port}"
        redis_url = f"redis://127.0.0.1:{options.redis_port}/0"
        self.deployed = deployed = run_ready_hook(
            DeployOptions(
                endpoint=endpoint,
                stack_name=STACK_NAME,
                parameters={
                    **stack_parameters(redis_url, endpoint, options.allow_loopback),
                    **options.parameters,
                },
                build_dir=options.state_dir / "build",
                # Shared by every state directory (tests use their own): the dependencies do not change.
                cache_dir=find_template().parent / ".hookline" / "cache",
                python_version=python_version(python),
                region=REGION,
                first_tick=False,
            ),
            options.state_dir / "deployed.json",
            report=self._report,
        )
        self._dynamodb = aws_client("dynamodb", endpoint, REGION)
        keys = DynamoKeyStore(self._dynamodb, deployed.outputs["ApiKeysTableName"])
        self.api_key, self.signing_secret = development_key(keys)
        secrets = SigningSecretProvider(keys, SystemClock())
        sink = RequestBin(lambda: secrets.secrets_for(DEV_TENANT))
        self._forwarder = Forwarder(deployed.api_url, {SINK_PATH: sink.serve})
        # A body the loopback server refuses to read is answered as the deployed API would (its template).
        refusals = gateway_responses(load_template(find_template()))
        self._server = GatewayServer(self._forwarder, port=options.port, gateway_responses=refusals)
        self._server.start()
        # The scheduled functions' first ticks, then the API's first request: the banner comes once
        # the API answers, by when the promoter and executor have (nearly) finished their cold starts
        # too (each unpacks the layer and imports it: seconds, tens of seconds on a loaded machine).
        first_tick(endpoint, REGION, load_template(find_template()), deployed.functions)
        warm_api(self.api_url, options.warm_api_workers)
        self.environment = cli_environment(deployed, endpoint, redis_url)
        self._write_env_file()
        self.started_in_s = time.monotonic() - started

    def _write_env_file(self) -> None:
        write_env_file(self.env_file, self.environment, self.api_url, self.api_key, self.signing_secret)

    def stop(self) -> None:
        """Stops the forwarder, then the emulator (with its Lambda workers), then redis-server."""
        if self._server is not None:
            self._server.stop()
            self._server = None
        if self._forwarder is not None:
            self._forwarder.close()
            self._forwarder = None
        if self._dynamodb is not None:
            self._dynamodb.close()
            self._dynamodb = None
        for child in reversed(self._children):
            child.stop()
        self._children.clear()
        discard_scratch(self.emulator_log)
        self.env_file.unlink(missing_ok=True)

    def kill(self) -> None:
        """SIGKILLs every process the stack started (the emulator with its workers), without waiting."""
        for child in self._children:
            child.kill()
        self.env_file.unlink(missing_ok=True)


def ready_hook() -> Path:
    """Returns the ready.d hook that deploys the template: LocalStack runs it in its container."""
    return find_template().parent / "localstack" / "ready.d" / "10-hookline.sh"


def ready_hook_environment(options: DeployOptions, output: Path) -> dict[str, str]:
    """Returns the variables that make the ready.d hook deploy with `options` and write the stack to output.

    Raises:
        DeployError: A parameter value has a space (the hook splits HOOKLINE_STACK_PARAMETERS on spaces).
    """
    for name, value in options.parameters.items():
        if any(character.isspace() for character in f"{name}{value}"):
            raise DeployError(f"parameter {name}={value!r}: the ready.d hook takes no spaces in parameters")
    return {
        "HOOKLINE_SRC": str(find_template().parent),
        # This interpreter has boto3, PyYAML and pip (the layer's build); the emulator's has no Hookline.
        "HOOKLINE_PYTHON": sys.executable,
        "HOOKLINE_AWS_ENDPOINT": options.endpoint,
        "HOOKLINE_STACK_NAME": options.stack_name,
        "HOOKLINE_STACK_PARAMETERS": " ".join(
            f"{name}={value}" for name, value in options.parameters.items()
        ),
        "HOOKLINE_LAMBDA_PYTHON": options.python_version,
        "HOOKLINE_BUILD_DIR": str(options.build_dir.resolve()),
        "HOOKLINE_CACHE_DIR": str(options.cache_dir.resolve()),
        "HOOKLINE_DEPLOY_OUTPUT": str(output.resolve()),
        "HOOKLINE_FIRST_TICK": "1" if options.first_tick else "0",
    }


def run_ready_hook(options: DeployOptions, output: Path, report: Callable[[str], None] = print) -> Deployed:
    """Deploys through the ready.d hook, as LocalStack would run it once ready; returns the created stack.

    ministack has no ready.d outside its container, so `hookline dev` runs the same script once the
    emulator answers its health check. The hook's output goes to report line by line.

    Raises:
        DeployError: The hook failed (its output says why).
    """
    output.unlink(missing_ok=True)
    environment = {**os.environ, **ready_hook_environment(options, output)}
    # Its own session: a Ctrl-C meant for `hookline dev` reaches it through the except below, once.
    hook = subprocess.Popen(
        ["sh", str(ready_hook())],
        env=environment,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        assert hook.stdout is not None
        for line in hook.stdout:
            report(line.rstrip("\n"))
        code = hook.wait()
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(hook.pid, signal.SIGKILL)
        hook.wait()
        raise
    if code != 0:
        raise DeployError(
            f"the ready.d hook {ready_hook()} failed with exit status {code} (its output is above)"
        )
    return read_deployed(output)


def warm_api(api_url: str, workers: int = 1) -> None:
    """Sends `workers` concurrent GET /healthz, each until it answers 200, so that many concurrent first
    requests find the API function warm.

    Each cold worker unpacks the layer and imports the function before it answers; requests sent together
    all meet cold workers, so the emulator starts one worker per request. It stops a surplus worker after
    it sat idle for its LAMBDA_WARM_TTL_SECONDS; the first worker stays.

    Raises:
        DeployError: A request had no 200 within WARM_TIMEOUT_S.
    """
    deadline = time.monotonic() + WARM_TIMEOUT_S
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        answered = list(pool.map(lambda _: _healthy_by(api_url, deadline), range(max(1, workers))))
    if not all(answered):
        raise DeployError(f"the deployed API did not answer GET /healthz within {WARM_TIMEOUT_S:.0f} s")


def _healthy_by(api_url: str, deadline: float) -> bool:
    """Sends GET /healthz until it answers 200 (True) or the monotonic deadline passes (False)."""
    while time.monotonic() < deadline:
        # A cold start slower than API Gateway's 29 s answers 504 (or times out); the worker is warm
        # for the next attempt.
        try:
            with urllib.request.urlopen(f"{api_url}/healthz", timeout=WARM_TIMEOUT_S) as answer:
                if answer.status == 200:
                    return True
        except OSError:
            time.sleep(0.5)
    return False


# The fan-out ceiling of a local deployment (the template's default, 100, is sized for AWS).
LOCAL_MAX_EXECUTORS = 4


def stack_parameters(redis_url: str, endpoint: str, allow_loopback: bool) -> dict[str, str]:
    """Returns the template parameters for a deployment on an emulator with a local Redis."""
    return {
        "RedisUrlOverride": redis_url,
        "AwsEndpointOverride": endpoint,
        "AllowLoopback": "true" if allow_loopback else "false",
        # An emulator has no NAT gateway, and the functions reach loopback callbacks without one.
        "Egress": "None",
        # Each execute invocation is a worker process on this machine: fan out no further than the
        # hand-wired stack does (StackOptions.max_executors); `--parameter MaxExecutors=N` raises it.
        "MaxExecutors": str(LOCAL_MAX_EXECUTORS),
    }


def cli_environment(deployed: Deployed, endpoint: str, redis_url: str) -> dict[str, str]:
    """Returns the variables that point `hookline` commands (and boto3) at the deployed stack."""
    outputs = deployed.outputs
    return {
        "HOOKLINE_AWS_ENDPOINT": endpoint,
        "HOOKLINE_REDIS_URL": redis_url,
        "HOOKLINE_JOBS_TABLE": outputs["JobsTableName"],
        "HOOKLINE_EXECUTIONS_TABLE": outputs["ExecutionsTableName"],
        "HOOKLINE_API_KEYS_TABLE": outputs["ApiKeysTableName"],
        "HOOKLINE_STACK_API_URL": deployed.api_url,
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
    }
