"""Puts the local stack together: services, tables, a development key, the functions, gateway and timers.

Everything the functions read comes from the environment, as in AWS, so the stack sets os.environ
before it imports a single function module; the modules are the files template.yaml names.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from hookline.adapters.dynamo.key_store import DynamoKeyStore
from hookline.domain.clock import SystemClock
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container, dynamodb_client
from hookline.usecases.signing_secrets import SigningSecretProvider
from hookline_local import services
from hookline_local.development import DEV_TENANT, REGION, development_key, write_env_file
from hookline_local.gateway import ApiRoute, Gateway, GatewayServer
from hookline_local.runtime import FunctionSpec, SandboxPool, function_spec, load_function
from hookline_local.scheduler import Scheduler, Timer
from hookline_local.sink import SINK_PATH, RequestBin
from hookline_local.template import (
    FUNCTION_TYPE,
    api_routes,
    binary_media_types,
    create_tables,
    find_template,
    function_environment,
    gateway_responses,
    load_template,
    schedules,
    table_names,
)

FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


@dataclass(frozen=True)
class StackOptions:
    """Where the local stack listens and keeps its files.

    Attributes:
        port: The API gateway's port on 127.0.0.1.
        redis_port: redis-server's port on 127.0.0.1.
        aws_port: moto's port on 127.0.0.1 (unused with aws_endpoint).
        aws_endpoint: An AWS endpoint to use instead of starting moto (LocalStack).
        state_dir: Where redis-server's directory, logs and dev.env go.
        max_executors: Execute invocations running at once, scheduled and fanned out together.
        api_sandboxes: Worker processes serving the API function, each one request at a time; one per
            CPU (2 to 4): more only share the same cores and each costs a cold start.
        install_redis: Whether a missing redis-server may be installed.
        allow_loopback: Whether callbacks may go to loopback (the request bin); False applies the
            SSRF policy of a deployment.
    """

    port: int = 3000
    redis_port: int = 6390
    aws_port: int = 5055
    aws_endpoint: str | None = None
    state_dir: Path = field(default_factory=lambda: find_template().parent / ".hookline")
    max_executors: int = 4
    api_sandboxes: int = field(default_factory=lambda: min(4, max(2, os.cpu_count() or 2)))
    install_redis: bool = True
    allow_loopback: bool = True


@dataclass
class _Started:
    children: list[services.ChildProcess] = field(default_factory=list)
    gateway: GatewayServer | None = None
    scheduler: Scheduler | None = None
    pools: list[SandboxPool] = field(default_factory=list)


class LocalStack:
    """The running local stack; start() brings it up, stop() takes it down in reverse order."""

    def __init__(self, options: StackOptions, report: Callable[[str], None] = print) -> None:
        self.options = options
        self._report = report
        self._started = _Started()
        self.api_key = ""
        self.signing_secret = ""
        self.api_url = f"http://127.0.0.1:{options.port}"
        self.environment: dict[str, str] = {}
        self.route_count = 0
        self.timers: list[tuple[str, int]] = []
        self._dynamodb: Any = None
        self._function_log: TextIO | None = None
        self._console: TextIO = sys.stdout

    @property
    def function_log(self) -> Path:
        """Returns the file that receives what the functions print (their CloudWatch Logs, locally)."""
        return self.options.state_dir / "functions.log"

    @property
    def env_file(self) -> Path:
        """Returns the file with the variables that point `hookline` commands at this stack."""
        return self.options.state_dir / "dev.env"

    def start(self) -> None:
        """Starts everything; on failure stops what had started and re-raises."""
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> None:
        options = self.options
        services.require_free_port(options.port, "the API", "--port")
        services.require_free_port(options.redis_port, "redis-server", "--redis-port")
        binary = services.find_redis_server(options.install_redis)
        redis_dir = options.state_dir / "redis"
        self._started.children.append(services.start_redis(binary, options.redis_port, redis_dir))
        endpoint = options.aws_endpoint
        if endpoint is None:
            services.require_free_port(options.aws_port, "moto", "--aws-port")
            moto = services.start_moto(options.aws_port, options.state_dir / "moto.log")
            self._started.children.append(moto)
            endpoint = f"http://127.0.0.1:{options.aws_port}"
        self.environment = stack_environment(options, endpoint)
        os.environ.update(self.environment)
        settings = Settings.from_env()
        template_path = find_template()
        template = load_template(template_path)
        # Kept open for the request bin's signature checks; closed on stop.
        self._dynamodb = dynamodb = dynamodb_client(settings, max_connections=4)
        create_tables(dynamodb, template, table_names(settings))
        keys = DynamoKeyStore(dynamodb, settings.api_keys_table)
        self.api_key, self.signing_secret = development_key(keys)
        self._secrets = SigningSecretProvider(keys, SystemClock())
        # Powertools warns on every invocation that records no metric; locally that is most of them.
        warnings.filterwarnings("ignore", message="No application metrics to publish")
        # What functions print (Powertools' JSON logs) goes where Lambda sends it, to a log, not the
        # console; Powertools' Logger binds sys.stdout when a function module is imported.
        self._function_log = open_function_log(self.function_log)
        self._console = sys.stdout
        sys.stdout = self._function_log
        self._start_functions(template, template_path.parent)
        self._write_env_file()

    def _start_functions(self, template: dict[str, Any], template_dir: Path) -> None:
        routes = api_routes(template)
        timer_specs = schedules(template)

        def spec(function_id: str) -> FunctionSpec:
            return function_spec(template, template_dir, function_id, REGION, self.function_log)

        # API functions run in sandbox processes (one request each at a time), the scheduled ones here.
        pools = {
            function_id: SandboxPool(spec(function_id), self.options.api_sandboxes)
            for function_id in dict.fromkeys(route.function_id for route in routes)
        }
        self._started.pools = list(pools.values())
        for pool in pools.values():
            pool.warm()
        # The execute function has no schedule: the promoter's fan-out starts it when the streams hold work.
        execute_id = execute_function_id(template)
        functions = {
            function_id: load_function(spec(function_id))
            for function_id in dict.fromkeys([*(timer.function_id for timer in timer_specs), execute_id])
        }
        scheduler = Scheduler(
            [Timer(functions[timer.function_id], timer.rate_s) for timer in timer_specs],
            functions[execute_id],
            self.options.max_executors,
            self._report,
        )
        for function in functions.values():
            container = getattr(function.module, "container", None)
            if isinstance(container, Container):
                # Fan-out starts executor threads here instead of invoking Lambda.
                container.executor_launcher = scheduler
        sink = RequestBin(lambda: self._secrets.secrets_for(DEV_TENANT))
        gateway = Gateway(
            [ApiRoute(route.method, route.path, pools[route.function_id].invoke) for route in routes],
            stage=str(template.get("Parameters", {}).get("Stage", {}).get("Default", "dev")),
            local_routes={SINK_PATH: sink.serve},
            binary_media_types=binary_media_types(template),
            gateway_responses=gateway_responses(template),
        )
        self._started.gateway = GatewayServer(
            gateway, port=self.options.port, gateway_responses=gateway.responses
        )
        self._started.gateway.start()
        self._started.scheduler = scheduler
        scheduler.start()
        self.route_count = len(routes)
        self.timers = [(timer.function_id, timer.rate_s) for timer in timer_specs]

    def _write_env_file(self) -> None:
        write_env_file(self.env_file, self.environment, self.api_url, self.api_key, self.signing_secret)

    @property
    def pids(self) -> dict[str, int]:
        """Returns the process id of each child service and of this process."""
        return {"hookline dev": os.getpid(), **{child.name: child.pid for child in self._started.children}}

    def stop(self) -> None:
        """Stops timers and gateway, then the services; running invocations die with the process."""
        started = self._started
        if started.scheduler is not None:
            started.scheduler.stop()
        if started.gateway is not None:
            started.gateway.stop()
        for pool in started.pools:
            pool.close()
        started.pools.clear()
        # Invocations still running now fail as Redis and moto go away; that is expected, not news.
        logging.disable(logging.CRITICAL)
        for child in reversed(started.children):
            child.stop()
        started.children.clear()
        if self._dynamodb is not None:
            self._dynamodb.close()
            self._dynamodb = None
        self.env_file.unlink(missing_ok=True)
        if self._function_log is not None:
            sys.stdout = self._console
            self._function_log.close()
            self._function_log = None

    def kill(self) -> None:
        """SIGKILLs every process the stack started, without waiting (when stop() overran its budget)."""
        for pool in self._started.pools:
            pool.kill()
        for child in self._started.children:
            child.kill()
        self.env_file.unlink(missing_ok=True)


def open_function_log(path: Path) -> TextIO:
    """Empties the function log and opens it for appending, as every sandbox process does.

    Every writer must append (O_APPEND): a writer that keeps its own offset ("w") writes over the lines
    the sandboxes appended meanwhile, and the log loses them.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")  # one run per log
    return path.open("a", encoding="utf-8", buffering=1)


def stack_environment(options: StackOptions, aws_endpoint: str) -> dict[str, str]:
    """Returns the variables the functions read (as template.yaml sets them in AWS), for this stack."""
    settings = Settings.from_env()  # table names and tunables the user exported are kept
    env = {
        "HOOKLINE_REDIS_URL": f"redis://127.0.0.1:{options.redis_port}/0",
        "HOOKLINE_AWS_ENDPOINT": aws_endpoint,
        "HOOKLINE_ALLOW_LOOPBACK": "true" if options.allow_loopback else "false",
        "HOOKLINE_JOBS_TABLE": settings.jobs_table,
        "HOOKLINE_EXECUTIONS_TABLE": settings.executions_table,
        "HOOKLINE_API_KEYS_TABLE": settings.api_keys_table,
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "POWERTOOLS_SERVICE_NAME": "hookline",
        "POWERTOOLS_METRICS_NAMESPACE": "Hookline",
        # Overlapping invocations share one metric set here, unlike in Lambda; flushing it from one while
        # another records could fail, so metrics are not flushed (only their 100-value overflow is logged).
        "POWERTOOLS_METRICS_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": os.environ.get("POWERTOOLS_LOG_LEVEL", "INFO"),
    }
    if options.aws_endpoint is None:
        # moto accepts anything; fixed fake credentials guarantee no real account is ever reached.
        env.update(FAKE_CREDENTIALS)
    else:
        env.update({name: os.environ.get(name, "test") for name in FAKE_CREDENTIALS})
    return env


def execute_function_id(template: dict[str, Any]) -> str:
    """Returns the function the promoter fans out: the one named by HOOKLINE_EXECUTE_FUNCTION."""
    for function_id, resource in template["Resources"].items():
        # Only functions: a Lambda permission (the HTTP API's) names a FunctionName too.
        name = resource.get("Properties", {}).get("FunctionName")
        if (
            resource.get("Type") == FUNCTION_TYPE
            and name is not None
            and function_environment(template, function_id).get("HOOKLINE_EXECUTE_FUNCTION") == name
        ):
            return str(function_id)
    raise KeyError("no function's FunctionName equals HOOKLINE_EXECUTE_FUNCTION in template.yaml")
