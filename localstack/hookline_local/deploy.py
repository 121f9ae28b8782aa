"""Deploys template.yaml to an AWS endpoint: build, package to S3, create the stack, wait for it.

The steps are `sam build` and `sam package` done by hand, so that no Docker and no SAM CLI are needed:

- build: the CoreLayer with the template's own build method (layers/core/Makefile, target
  build-CoreLayer, with ARTIFACTS_DIR), its wheels for the Python that will run the functions; each
  function is its plain CodeUri folder;
- package: each artifact zipped to the endpoint's S3 and its CodeUri/ContentUri replaced by the object;
- deploy: CreateStack with the SAM transform and the given parameters, waiting for CREATE_COMPLETE.

`python -m hookline_local.deploy` runs the same steps from a shell: the ready.d hook
(localstack/ready.d/10-hookline.sh) calls it, in LocalStack's container and for `hookline dev` alike.

Two steps make up for what an emulator does not do (AWS does both by itself): tables get the TTL their
TimeToLiveSpecification names, and each scheduled function is invoked once at the end, as its first
tick, instead of a minute later (the emulator's first `rate(1 minute)` fires one interval after creation).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import hashlib
import io
import json
import re
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3

from hookline_local.template import FUNCTION_TYPE, TABLE_TYPE, find_template, load_template, ttl_attribute

LAYER_TYPE = "AWS::Serverless::LayerVersion"
ARTIFACT_BUCKET = "hookline-artifacts"
DEPLOY_TIMEOUT_S = 120.0
DEFAULT_ENDPOINT = "http://localhost:4566"
# A REST API's stage URL, or an HTTP API's $default stage (no stage in the path: ApiKind=Http).
_API_URL = re.compile(r"^https://(?P<api_id>[^.]+)\.execute-api\.[^/]+(?:/(?P<stage>[^/]+))?/?$")
_SKIPPED = {"__pycache__"}


class DeployError(RuntimeError):
    """The build, the packaging or the stack failed; the message says which resource and why."""


@dataclass(frozen=True)
class DeployOptions:
    """What to deploy where.

    Attributes:
        endpoint: The AWS endpoint (the emulator), e.g. http://127.0.0.1:4566.
        stack_name: The CloudFormation stack's name.
        parameters: Template parameters, by name (the rest keep their defaults).
        build_dir: Where built artifacts go.
        cache_dir: Where the layer's dependencies are kept between builds (keyed by requirements.txt
            and the Python version).
        python_version: "major.minor" of the Python that runs the functions (the layer's wheels).
        region: The region to deploy in.
        first_tick: Whether to invoke every scheduled function once when the stack is up (False: the
            caller does it with first_tick(), e.g. once the API is warm).
    """

    endpoint: str
    stack_name: str = "hookline"
    parameters: Mapping[str, str] = field(default_factory=dict)
    build_dir: Path = Path(".hookline/build")
    cache_dir: Path = Path(".hookline/cache")
    python_version: str = f"{sys.version_info[0]}.{sys.version_info[1]}"
    region: str = "us-east-1"
    first_tick: bool = True


@dataclass(frozen=True)
class Deployed:
    """A created stack: its outputs, and the URL that reaches its API on the endpoint."""

    stack_name: str
    outputs: dict[str, str]
    api_url: str
    functions: dict[str, str]  # logical id -> physical function name


def aws_client(service: str, endpoint: str, region: str) -> Any:
    """Returns a boto3 client for the endpoint with fake credentials (no real account is ever reached)."""
    return boto3.session.Session().client(  # type: ignore[call-overload]
        service,
        endpoint_url=endpoint,
        region_name=region,
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )


def deploy(template_path: Path, options: DeployOptions, log: Callable[[str], None] = print) -> Deployed:
    """Builds, packages and deploys the template; returns the created stack."""
    template = load_template(template_path)
    started = time.monotonic()
    artifacts = build(template, template_path.parent, options, options.python_version)
    log(f"built {len(artifacts)} artifacts in {time.monotonic() - started:.1f} s")
    s3 = aws_client("s3", options.endpoint, options.region)
    step = time.monotonic()
    packaged = package(template, artifacts, s3, ARTIFACT_BUCKET)
    log(f"packaged to s3://{ARTIFACT_BUCKET} in {time.monotonic() - step:.1f} s")
    cfn = aws_client("cloudformation", options.endpoint, options.region)
    step = time.monotonic()
    template_url = upload_template(packaged, s3, ARTIFACT_BUCKET, options.endpoint)
    outputs = create_stack(cfn, options.stack_name, template_url, options.parameters)
    log(f"stack {options.stack_name} CREATE_COMPLETE after {time.monotonic() - step:.1f} s")
    resources = stack_resources(cfn, options.stack_name)
    apply_table_ttl(aws_client("dynamodb", options.endpoint, options.region), template, resources)
    functions = {
        logical_id: resources[logical_id]
        for logical_id, resource in template["Resources"].items()
        if resource.get("Type") == FUNCTION_TYPE and logical_id in resources
    }
    if options.first_tick:
        first_tick(options.endpoint, options.region, template, functions)
    log(f"deployed in {time.monotonic() - started:.1f} s")
    return Deployed(
        stack_name=options.stack_name,
        outputs=outputs,
        api_url=endpoint_api_url(outputs["ApiUrl"], options.endpoint),
        functions=functions,
    )


def build(
    template: Mapping[str, Any], template_dir: Path, options: DeployOptions, python_version: str
) -> dict[str, Path]:
    """Builds every function and layer; returns the directory to zip for each logical id."""
    artifacts: dict[str, Path] = {}
    for logical_id, resource in template["Resources"].items():
        properties = resource.get("Properties", {})
        if resource.get("Type") == FUNCTION_TYPE:
            artifacts[logical_id] = template_dir / properties["CodeUri"]
        elif resource.get("Type") == LAYER_TYPE:
            artifacts[logical_id] = build_layer(
                logical_id, resource, template_dir, options.build_dir, options.cache_dir, python_version
            )
    return artifacts


def build_layer(
    logical_id: str,
    resource: Mapping[str, Any],
    template_dir: Path,
    build_dir: Path,
    cache_dir: Path,
    python_version: str,
) -> Path:
    """Runs the layer's makefile build (as `sam build` does) into build_dir; returns the artifact dir.

    The dependencies are installed once per requirements.txt and Python version into a cache beside
    the artifacts (the makefile's LAYER_DEPS_DIR), so a rebuild after a code change downloads nothing.
    """
    metadata = resource.get("Metadata", {})
    if metadata.get("BuildMethod") != "makefile":
        raise DeployError(f"{logical_id}: only BuildMethod makefile is supported, not {metadata}")
    source = template_dir / resource["Properties"]["ContentUri"]
    requirements = (source / "requirements.txt").read_bytes()
    deps_key = hashlib.sha256(requirements + python_version.encode()).hexdigest()[:16]
    artifacts_dir = (build_dir / logical_id).resolve()
    shutil.rmtree(artifacts_dir, ignore_errors=True)
    artifacts_dir.mkdir(parents=True)
    command = [
        "make", "--silent", "-C", str(source), f"build-{logical_id}",
        f"ARTIFACTS_DIR={artifacts_dir}",
        f"LAYER_DEPS_DIR={(cache_dir / f'{logical_id}-deps-{deps_key}').resolve()}",
        f"PYTHON={sys.executable}",
        f"LAMBDA_PYTHON_VERSION={python_version}",
    ]  # fmt: skip
    # Its own session: a Ctrl-C meant for `hookline dev` must not kill pip half-way through the cache.
    done = subprocess.run(
        command, capture_output=True, text=True, check=False, timeout=600, start_new_session=True
    )
    if done.returncode != 0:
        raise DeployError(f"building {logical_id} failed:\n{done.stdout}{done.stderr}")
    return artifacts_dir


def zip_directory(directory: Path) -> bytes:
    """Returns a zip of the directory's files (no __pycache__), paths relative to it, in sorted order."""
    buffer = io.BytesIO()
    # Level 1: the layer is ~27 MB of mostly Python; higher levels cost seconds for little size.
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for path in sorted(directory.rglob("*")):
            if path.is_file() and not _SKIPPED.intersection(path.relative_to(directory).parts):
                archive.write(path, path.relative_to(directory))
    return buffer.getvalue()


def package(
    template: Mapping[str, Any], artifacts: Mapping[str, Path], s3: Any, bucket: str
) -> dict[str, Any]:
    """Uploads each artifact's zip to S3; returns a copy of the template that names the objects."""
    packaged = copy.deepcopy(dict(template))
    s3.create_bucket(Bucket=bucket)
    for logical_id, directory in artifacts.items():
        body = zip_directory(directory)
        key = f"{logical_id}-{hashlib.sha256(body).hexdigest()[:16]}.zip"
        s3.put_object(Bucket=bucket, Key=key, Body=body)
        properties = packaged["Resources"][logical_id]["Properties"]
        uri_key = "ContentUri" if "ContentUri" in properties else "CodeUri"
        properties[uri_key] = f"s3://{bucket}/{key}"
    return packaged


def upload_template(template: Mapping[str, Any], s3: Any, bucket: str, endpoint: str) -> str:
    """Uploads the packaged template to S3; returns its path-style URL for CreateStack's TemplateURL.

    As `sam deploy` does: an inline TemplateBody is limited to 51,200 bytes, a template in S3 to 1 MB.
    The key carries the template's digest, so a redeploy of a changed template never reads a stale one.
    """
    body = json.dumps(template, separators=(",", ":")).encode("utf-8")
    key = f"template-{hashlib.sha256(body).hexdigest()[:16]}.json"
    s3.put_object(Bucket=bucket, Key=key, Body=body)
    return f"{endpoint.rstrip('/')}/{bucket}/{key}"


def create_stack(cfn: Any, name: str, template_url: str, parameters: Mapping[str, str]) -> dict[str, str]:
    """Creates the stack from the template at template_url, waits for CREATE_COMPLETE; returns its outputs.

    Raises:
        DeployError: The stack failed (the message lists each failed resource and its reason) or did
            not finish within DEPLOY_TIMEOUT_S.
    """
    cfn.create_stack(
        StackName=name,
        TemplateURL=template_url,
        Parameters=[{"ParameterKey": key, "ParameterValue": value} for key, value in parameters.items()],
        Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"],
        OnFailure="DO_NOTHING",
    )
    deadline = time.monotonic() + DEPLOY_TIMEOUT_S
    while True:
        stack = cfn.describe_stacks(StackName=name)["Stacks"][0]
        status = stack["StackStatus"]
        if not status.endswith("_IN_PROGRESS"):
            break
        if time.monotonic() > deadline:
            raise DeployError(f"stack {name} still {status} after {DEPLOY_TIMEOUT_S:.0f} s")
        time.sleep(0.2)
    if status != "CREATE_COMPLETE":
        raise DeployError(
            f"stack {name} is {status}: {stack.get('StackStatusReason', '')}\n" + failures(cfn, name)
        )
    return {output["OutputKey"]: output["OutputValue"] for output in stack.get("Outputs", [])}


def failures(cfn: Any, name: str) -> str:
    """Returns one line per failed resource event of the stack."""
    events = cfn.describe_stack_events(StackName=name)["StackEvents"]
    return "\n".join(
        f"  {event['LogicalResourceId']}: {event.get('ResourceStatusReason', '')}"
        for event in events
        if event["ResourceStatus"].endswith("FAILED")
    )


def stack_resources(cfn: Any, name: str) -> dict[str, str]:
    """Returns logical id -> physical id of the stack's resources."""
    paginator = cfn.get_paginator("list_stack_resources")
    return {
        summary["LogicalResourceId"]: summary.get("PhysicalResourceId", "")
        for page in paginator.paginate(StackName=name)
        for summary in page["StackResourceSummaries"]
    }


def apply_table_ttl(dynamodb: Any, template: Mapping[str, Any], resources: Mapping[str, str]) -> None:
    """Enables each table's TimeToLiveSpecification (the emulator's CloudFormation does not apply it)."""
    for logical_id, resource in template["Resources"].items():
        if resource.get("Type") != TABLE_TYPE or logical_id not in resources:
            continue
        attribute = ttl_attribute(template, logical_id)
        if attribute is None:
            continue
        table = resources[logical_id]
        current = dynamodb.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
        if current.get("TimeToLiveStatus") not in {"ENABLED", "ENABLING"}:
            dynamodb.update_time_to_live(
                TableName=table, TimeToLiveSpecification={"Enabled": True, "AttributeName": attribute}
            )


def first_tick(endpoint: str, region: str, template: Mapping[str, Any], functions: Mapping[str, str]) -> None:
    """Invokes each scheduled function once, asynchronously, as its schedule's first tick would."""
    lambda_client = aws_client("lambda", endpoint, region)
    for logical_id in scheduled_functions(template):
        lambda_client.invoke(FunctionName=functions[logical_id], InvocationType="Event", Payload=b"{}")


def scheduled_functions(template: Mapping[str, Any]) -> list[str]:
    """Returns the functions with a Schedule or ScheduleV2 event, in template order."""
    return [
        logical_id
        for logical_id, resource in template["Resources"].items()
        if resource.get("Type") == FUNCTION_TYPE
        and any(
            event.get("Type") in {"Schedule", "ScheduleV2"}
            for event in _events(resource.get("Properties", {}))
        )
    ]


def _events(properties: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    return dict(properties.get("Events") or {}).values()


def endpoint_api_url(api_url: str, endpoint: str) -> str:
    """Maps the ApiUrl output (https://{api}.execute-api.{region}.amazonaws.com/{stage}) to the URL that
    reaches the same API and stage on an emulator endpoint (its /_aws/execute-api/{api}/{stage} path); an
    output without a stage (an HTTP API's $default stage) maps to /_aws/execute-api/{api}, where the emulator
    serves that stage's routes.

    Raises:
        DeployError: The output is not an execute-api URL.
    """
    match = _API_URL.match(api_url)
    if match is None:
        raise DeployError(f"ApiUrl {api_url!r} is not an execute-api URL")
    stage = f"/{match['stage']}" if match["stage"] else ""
    return f"{endpoint.rstrip('/')}/_aws/execute-api/{match['api_id']}{stage}"


def write_deployed(deployed: Deployed, path: Path) -> None:
    """Writes a created stack as JSON (read back with read_deployed), atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.partial")
    partial.write_text(json.dumps(dataclasses.asdict(deployed), indent=2, sort_keys=True), encoding="utf-8")
    partial.replace(path)


def read_deployed(path: Path) -> Deployed:
    """Reads a created stack that write_deployed wrote."""
    fields = json.loads(path.read_text(encoding="utf-8"))
    return Deployed(
        stack_name=str(fields["stack_name"]),
        outputs={str(key): str(value) for key, value in fields["outputs"].items()},
        api_url=str(fields["api_url"]),
        functions={str(key): str(value) for key, value in fields["functions"].items()},
    )


def template_python_version(template: Mapping[str, Any]) -> str:
    """Returns "major.minor" of the Globals' Lambda runtime (python3.11 -> 3.11): the layer's wheels' Python
    where the emulator honours the declared runtime, as LocalStack does."""
    runtime = str(template.get("Globals", {}).get("Function", {}).get("Runtime", ""))
    if not runtime.startswith("python"):
        raise DeployError(f"the template's Globals declare no Python runtime ({runtime!r})")
    return runtime.removeprefix("python")


def parse_parameters(pairs: Iterable[str]) -> dict[str, str]:
    """Returns NAME=VALUE pairs as a dict.

    Raises:
        DeployError: A pair has no "=" or no name.
    """
    parameters: dict[str, str] = {}
    for pair in pairs:
        name, equals, value = pair.partition("=")
        if not equals or not name:
            raise DeployError(f"a parameter must be NAME=VALUE, not {pair!r}")
        parameters[name] = value
    return parameters


def main(argv: list[str] | None = None) -> int:
    """`python -m hookline_local.deploy`: deploys template.yaml to an endpoint; see --help."""
    parser = argparse.ArgumentParser(
        prog="python -m hookline_local.deploy",
        description="Build, package and deploy template.yaml to a LocalStack-compatible endpoint.",
    )
    parser.add_argument(
        "--endpoint", default=DEFAULT_ENDPOINT, help=f"AWS endpoint (default {DEFAULT_ENDPOINT})"
    )
    parser.add_argument("--template", type=Path, default=None, help="default: $HOOKLINE_TEMPLATE, else found")
    parser.add_argument("--stack-name", default="hookline")
    parser.add_argument(
        "--parameter", action="append", default=[], metavar="NAME=VALUE", help="a template parameter"
    )
    parser.add_argument("--build-dir", type=Path, default=Path(".hookline/build"))
    parser.add_argument("--cache-dir", type=Path, default=Path(".hookline/cache"))
    parser.add_argument(
        "--python-version", default=None, help="the functions' Python, major.minor (default: the template's)"
    )
    parser.add_argument("--region", default="us-east-1")
    parser.add_argument(
        "--no-first-tick", action="store_true", help="do not invoke the scheduled functions once at the end"
    )
    parser.add_argument("--output", type=Path, default=None, help="write the created stack here as JSON")
    args = parser.parse_args(argv)
    try:
        template_path = args.template or find_template()
        options = DeployOptions(
            endpoint=args.endpoint,
            stack_name=args.stack_name,
            parameters=parse_parameters(args.parameter),
            build_dir=args.build_dir,
            cache_dir=args.cache_dir,
            python_version=args.python_version or template_python_version(load_template(template_path)),
            region=args.region,
            first_tick=not args.no_first_tick,
        )
        deployed = deploy(template_path, options, log=lambda line: print(line, flush=True))
    except DeployError as error:
        print(f"deploying {args.stack_name} to {args.endpoint} failed: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group: stop quietly
        return 130
    if args.output is not None:
        write_deployed(deployed, args.output)
    print(f"stack {deployed.stack_name}: API at {deployed.api_url}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
