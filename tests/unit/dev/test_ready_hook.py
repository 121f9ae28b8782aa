"""The ready.d hook and the compose file that mounts it for LocalStack; the embedded emulator's use of it.

No Docker here: the compose file is read as YAML and its mounts resolved on this checkout, and the hook runs
with a stand-in Python that records the deploy command it would run. The hook deploying for real onto the
embedded emulator is what every `hookline dev` start does (tests/e2e).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from hookline_local.deploy import DeployError, DeployOptions
from hookline_local.deployed import ready_hook, ready_hook_environment, stack_parameters
from hookline_local.template import find_template, load_template

REPOSITORY = find_template().parent
COMPOSE = REPOSITORY / "localstack" / "docker-compose.yml"
READY_D = "/etc/localstack/init/ready.d"

# The stand-in Python: writes its arguments and the PYTHONPATH it got as JSON to $RECORD.
RECORDER = """#!/bin/sh
python3 -c 'import json, os, sys; json.dump({"argv": sys.argv[1:], "pythonpath": os.environ["PYTHONPATH"]},
    open(os.environ["RECORD"], "w"))' "$@"
"""


def _compose() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    return document


def _mounts(service: dict[str, Any]) -> dict[str, Path]:
    """Returns container path -> host path of a service's bind mounts, resolved beside the compose file."""
    mounts = {}
    for volume in service["volumes"]:
        host, container, *_ = volume.split(":")
        mounts[container] = (COMPOSE.parent / host).resolve()
    return mounts


def test_given_compose_file_then_localstack_runs_this_hook_from_ready_d_with_the_repository_beside() -> None:
    localstack = _compose()["services"]["localstack"]
    mounts = _mounts(localstack)
    assert (mounts[READY_D] / ready_hook().name).resolve() == ready_hook().resolve()
    # The hook's default HOOKLINE_SRC in the container: the repository, with the template it deploys.
    assert mounts["/opt/hookline"] == REPOSITORY
    assert (mounts["/opt/hookline"] / "template.yaml").is_file()
    assert "/opt/hookline" in ready_hook().read_text(encoding="utf-8")
    assert ready_hook().stat().st_mode & stat.S_IXUSR, "LocalStack runs only executable hooks"


def test_given_compose_file_then_parameters_name_template_parameters_and_redis_is_a_service() -> None:
    compose = _compose()
    environment = compose["services"]["localstack"]["environment"]
    parameters = dict(pair.split("=", 1) for pair in environment["HOOKLINE_STACK_PARAMETERS"].split())
    assert set(parameters) <= set(load_template()["Parameters"])
    assert parameters["RedisUrlOverride"].startswith("redis://redis:")
    assert "redis" in compose["services"]
    network = environment["LAMBDA_DOCKER_NETWORK"]
    assert compose["networks"][network]["name"] == network
    assert network in compose["services"]["redis"]["networks"]


def test_given_compose_file_then_every_service_of_the_template_and_the_deploy_step_is_enabled() -> None:
    services = set(_compose()["services"]["localstack"]["environment"]["SERVICES"].split(","))
    needed = {"cloudformation", "s3", "iam", "sts", "logs"}  # the deploy step, roles, function logs
    prefixes = {
        "AWS::DynamoDB::": "dynamodb",
        "AWS::Serverless::Function": "lambda",
        "AWS::Serverless::LayerVersion": "lambda",
        "AWS::Lambda::": "lambda",
        "AWS::Serverless::Api": "apigateway",
        "AWS::ApiGateway::": "apigateway",
        "AWS::Scheduler::": "scheduler",
        "AWS::Events::": "events",
        "AWS::EC2::": "ec2",
    }
    for resource in load_template()["Resources"].values():
        needed |= {service for prefix, service in prefixes.items() if resource["Type"].startswith(prefix)}
    assert needed <= services


def _run_hook(tmp_path: Path, environment: dict[str, str]) -> dict[str, Any]:
    python = tmp_path / "python"
    python.write_text(RECORDER, encoding="utf-8")
    python.chmod(0o755)
    record = tmp_path / "record.json"
    env = {**environment, "PATH": os.environ["PATH"], "HOOKLINE_PYTHON": str(python), "RECORD": str(record)}
    subprocess.run(["sh", str(ready_hook())], env=env, check=True, timeout=30)
    recorded: dict[str, Any] = json.loads(record.read_text(encoding="utf-8"))
    return recorded


def _option(argv: list[str], name: str) -> list[str]:
    return [argv[index + 1] for index, value in enumerate(argv) if value == name]


def test_given_no_settings_when_hook_runs_then_it_deploys_this_repository_to_localhost(
    tmp_path: Path,
) -> None:
    recorded = _run_hook(tmp_path, {})
    argv = recorded["argv"]
    assert argv[:2] == ["-m", "hookline_local.deploy"]
    assert _option(argv, "--endpoint") == ["http://localhost:4566"]
    assert _option(argv, "--template") == [str(REPOSITORY / "template.yaml")]
    assert _option(argv, "--output") == ["/tmp/hookline/deployed.json"]
    assert _option(argv, "--parameter") == []
    assert "--no-first-tick" not in argv
    assert "--python-version" not in argv  # the template's runtime, as LocalStack runs it
    assert recorded["pythonpath"].split(":")[:2] == [
        str(REPOSITORY / "localstack"),
        str(REPOSITORY / "layers/core"),
    ]


def test_given_embedded_emulator_options_when_hook_runs_then_deploy_gets_each_of_them(tmp_path: Path) -> None:
    parameters = stack_parameters("redis://127.0.0.1:6411/0", "http://127.0.0.1:4611", False)
    options = DeployOptions(
        endpoint="http://127.0.0.1:4611",
        stack_name="hookline",
        parameters=parameters,
        build_dir=tmp_path / "build",
        cache_dir=tmp_path / "cache",
        python_version="3.11",
        first_tick=False,
    )
    output = tmp_path / "deployed.json"
    argv = _run_hook(tmp_path, ready_hook_environment(options, output))["argv"]
    assert _option(argv, "--endpoint") == ["http://127.0.0.1:4611"]
    assert _option(argv, "--parameter") == [f"{name}={value}" for name, value in parameters.items()]
    assert "RedisUrlOverride=redis://127.0.0.1:6411/0" in _option(argv, "--parameter")
    assert "AllowLoopback=false" in _option(argv, "--parameter")
    assert _option(argv, "--python-version") == ["3.11"]
    assert _option(argv, "--build-dir") == [str(tmp_path / "build")]
    assert _option(argv, "--cache-dir") == [str(tmp_path / "cache")]
    assert _option(argv, "--output") == [str(output)]
    assert "--no-first-tick" in argv


def test_given_parameter_with_a_space_then_hook_environment_refuses_it(tmp_path: Path) -> None:
    options = DeployOptions(endpoint="http://127.0.0.1:4566", parameters={"AlarmEmail": "a b"})
    with pytest.raises(DeployError, match="no spaces"):
        ready_hook_environment(options, tmp_path / "deployed.json")
