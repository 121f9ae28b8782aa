"""Reads template.yaml, the single definition of tables, routes, schedules and environment.

The local stack and the tests take table definitions, API routes, schedules and environment variables
from here instead of repeating them, so that what runs locally is what CloudFormation deploys.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from hookline.plumbing.settings import Settings
from hookline_local.conditions import resolve

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

TEMPLATE_FILE = "template.yaml"
TEMPLATE_ENV = "HOOKLINE_TEMPLATE"
FUNCTION_TYPE = "AWS::Serverless::Function"
API_TYPE = "AWS::Serverless::Api"
TABLE_TYPE = "AWS::DynamoDB::Table"
# create_table accepts these keys of a CloudFormation table; the rest (PITR, SSE, TTL) is either set
# by another call or irrelevant to a local table.
_CREATE_TABLE_KEYS = (
    "AttributeDefinitions", "KeySchema", "BillingMode", "ProvisionedThroughput", "GlobalSecondaryIndexes",
)  # fmt: skip
_INDEX_KEYS = ("IndexName", "KeySchema", "Projection", "ProvisionedThroughput")
_RATE = re.compile(r"^rate\(\s*(\d+)\s+(second|minute|hour|day)s?\s*\)$")
_UNIT_S = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}


class CloudFormationLoader(yaml.SafeLoader):
    """Does YAML safe loading, turning CloudFormation short tags (!Ref, !Sub, ...) into their long form."""


# The short-form intrinsic functions; any other "!" tag is an error, as with CloudFormation.
SHORT_TAGS = (
    "Ref", "Condition", "GetAtt", "Sub", "If", "Equals", "Not", "And", "Or", "Select", "Split", "Join",
    "FindInMap", "GetAZs", "ImportValue", "Base64", "Cidr",
)  # fmt: skip


def _construct_intrinsic(loader: yaml.SafeLoader, node: yaml.Node) -> dict[str, Any]:
    tag = node.tag.removeprefix("!")
    name = tag if tag in {"Ref", "Condition"} else f"Fn::{tag}"
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
        if tag == "GetAtt":
            # "Resource.Attribute.Sub" is ["Resource", "Attribute.Sub"] in long form.
            value = str(value).split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    elif isinstance(node, yaml.MappingNode):
        value = loader.construct_mapping(node, deep=True)
    else:
        raise yaml.constructor.ConstructorError(
            None, None, f"unexpected node for {node.tag}", node.start_mark
        )
    return {name: value}


for _tag in SHORT_TAGS:
    CloudFormationLoader.add_constructor(f"!{_tag}", _construct_intrinsic)


@dataclass(frozen=True)
class Route:
    """An API Gateway route (one `Api` event) and the handler that serves it."""

    function_id: str
    method: str
    path: str
    handler_file: str  # relative to the template's directory, e.g. "functions/submit/app.py"
    handler_name: str  # the function inside handler_file, e.g. "handler"


@dataclass(frozen=True)
class ScheduleSpec:
    """A `ScheduleV2`/`Schedule` event: a function invoked every `rate_s` seconds."""

    function_id: str
    rate_s: int
    handler_file: str
    handler_name: str


def find_template(start: Path | None = None) -> Path:
    """Returns the path of template.yaml: $HOOKLINE_TEMPLATE, else the nearest one above `start`."""
    override = os.environ.get(TEMPLATE_ENV)
    if override:
        return Path(override)
    here = (start or Path(__file__)).resolve()
    for directory in (here, *here.parents):
        candidate = directory / TEMPLATE_FILE
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"no {TEMPLATE_FILE} above {here}; set {TEMPLATE_ENV}")


def load_template(path: Path | None = None) -> dict[str, Any]:
    """Loads the SAM template at `path` (default: find_template()) into plain dicts and lists."""
    path = path or find_template()
    with path.open(encoding="utf-8") as stream:
        document = yaml.load(stream, Loader=CloudFormationLoader)  # a SafeLoader: no arbitrary objects
    if not isinstance(document, dict) or "Resources" not in document:
        raise ValueError(f"{path} is not a CloudFormation template")
    return document


def _resources(template: Mapping[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource
        for logical_id, resource in template["Resources"].items()
        if resource.get("Type") == resource_type
    }


def _function_properties(template: Mapping[str, Any], logical_id: str) -> dict[str, Any]:
    """Returns a function's properties with Globals.Function applied (environment merged, not replaced)."""
    resource = template["Resources"][logical_id]
    if resource.get("Type") != FUNCTION_TYPE:
        raise KeyError(f"{logical_id} is not an {FUNCTION_TYPE}")
    defaults: dict[str, Any] = template.get("Globals", {}).get("Function", {})
    own: dict[str, Any] = resource.get("Properties", {})
    return {**defaults, **own, "Environment": {"Variables": _merged_environment(defaults, own)}}


def _merged_environment(defaults: Mapping[str, Any], own: Mapping[str, Any]) -> dict[str, Any]:
    return {
        **defaults.get("Environment", {}).get("Variables", {}),
        **own.get("Environment", {}).get("Variables", {}),
    }


def _handler_location(properties: Mapping[str, Any]) -> tuple[str, str]:
    """Turns CodeUri "functions/x/" and Handler "app.handler" into ("functions/x/app.py", "handler")."""
    module, _, name = str(properties["Handler"]).rpartition(".")
    code_dir = str(properties.get("CodeUri", ".")).rstrip("/")
    return f"{code_dir}/{module.replace('.', '/')}.py", name


def function_ids(template: Mapping[str, Any]) -> list[str]:
    """Returns the logical ids of all functions, in template order."""
    return list(_resources(template, FUNCTION_TYPE))


def function_environment(template: Mapping[str, Any], logical_id: str) -> dict[str, Any]:
    """Returns a function's environment variables: Globals merged with its own (values unresolved)."""
    variables: dict[str, Any] = _function_properties(template, logical_id)["Environment"]["Variables"]
    return variables


def function_handler(template: Mapping[str, Any], logical_id: str) -> tuple[str, str]:
    """Returns (handler file relative to the template, handler function name) of a function."""
    return _handler_location(_function_properties(template, logical_id))


def function_timeout_s(template: Mapping[str, Any], logical_id: str) -> int:
    """Returns a function's timeout in seconds (Lambda's default of 3 s when neither sets it)."""
    return int(_function_properties(template, logical_id).get("Timeout", 3))


def api_routes(template: Mapping[str, Any]) -> list[Route]:
    """Returns every `Api` event of every function, in template order."""
    routes = []
    for logical_id, resource in _resources(template, FUNCTION_TYPE).items():
        handler_file, handler_name = function_handler(template, logical_id)
        for event in resource.get("Properties", {}).get("Events", {}).values():
            if event.get("Type") != "Api":
                continue
            properties = event["Properties"]
            routes.append(
                Route(
                    function_id=logical_id,
                    method=str(properties["Method"]).upper(),
                    path=str(properties["Path"]),
                    handler_file=handler_file,
                    handler_name=handler_name,
                )
            )
    return routes


def binary_media_types(template: Mapping[str, Any]) -> list[str]:
    """Returns the REST API's binary media types, unescaped ("*~1*" in the template is "*/*")."""
    found: list[str] = []
    for resource in _resources(template, API_TYPE).values():
        for pattern in resource.get("Properties", {}).get("BinaryMediaTypes", []):
            found.append(str(pattern).replace("~1", "/").replace("~0", "~"))
    return found


@dataclass(frozen=True)
class GatewayResponse:
    """A REST API's own answer of one type (GatewayResponses): its status (None keeps the type's own) and
    its application/json body template."""

    status: int | None
    template: str | None


def gateway_responses(template: Mapping[str, Any]) -> dict[str, GatewayResponse]:
    """Returns the REST API's customised gateway responses by type (MISSING_AUTHENTICATION_TOKEN, ...)."""
    found: dict[str, GatewayResponse] = {}
    for resource in _resources(template, API_TYPE).values():
        for kind, spec in (resource.get("Properties", {}).get("GatewayResponses") or {}).items():
            status = spec.get("StatusCode")
            body = (spec.get("ResponseTemplates") or {}).get("application/json")
            found[str(kind)] = GatewayResponse(None if status is None else int(status), body)
    return found


def parse_rate_s(expression: str) -> int:
    """Returns the period in seconds of "rate(N unit)"; cron() and other expressions raise ValueError."""
    match = _RATE.match(expression.strip())
    if match is None:
        raise ValueError(f"unsupported schedule expression {expression!r}: only rate(N unit) is")
    return int(match.group(1)) * _UNIT_S[match.group(2)]


def schedules(template: Mapping[str, Any]) -> list[ScheduleSpec]:
    """Returns every scheduled (EventBridge) trigger of every function, in template order."""
    specs = []
    for logical_id, resource in _resources(template, FUNCTION_TYPE).items():
        handler_file, handler_name = function_handler(template, logical_id)
        for event in resource.get("Properties", {}).get("Events", {}).values():
            if event.get("Type") not in {"ScheduleV2", "Schedule"}:
                continue
            specs.append(
                ScheduleSpec(
                    function_id=logical_id,
                    rate_s=parse_rate_s(str(event["Properties"]["ScheduleExpression"])),
                    handler_file=handler_file,
                    handler_name=handler_name,
                )
            )
    return specs


def table_definitions(
    template: Mapping[str, Any], parameters: Mapping[str, str] | None = None
) -> dict[str, dict[str, Any]]:
    """Returns, per table logical id, the keyword arguments of DynamoDB create_table but TableName, as the
    template deploys them with these parameter overrides (default: the parameters' defaults): the billing
    mode and any provisioned throughput follow TableBilling."""
    definitions = {}
    resolved = resolve(template, parameters, substitute_parameters=True)
    for logical_id, resource in _resources(resolved, TABLE_TYPE).items():
        properties = resource["Properties"]
        kwargs = {key: properties[key] for key in _CREATE_TABLE_KEYS if key in properties}
        if "GlobalSecondaryIndexes" in kwargs:
            kwargs["GlobalSecondaryIndexes"] = [
                {key: index[key] for key in _INDEX_KEYS if key in index}
                for index in kwargs["GlobalSecondaryIndexes"]
            ]
        definitions[logical_id] = kwargs
    return definitions


def ttl_attribute(template: Mapping[str, Any], logical_id: str) -> str | None:
    """Returns the TTL attribute name of a table, or None when TTL is not enabled on it."""
    spec = template["Resources"][logical_id]["Properties"].get("TimeToLiveSpecification")
    if not spec or not spec.get("Enabled"):
        return None
    return str(spec["AttributeName"])


def table_names(settings: Settings) -> dict[str, str]:
    """Returns the table name that `settings` use for each table logical id of the template."""
    return {
        "JobsTable": settings.jobs_table,
        "ExecutionsTable": settings.executions_table,
        "ApiKeysTable": settings.api_keys_table,
    }


def create_tables(dynamodb: DynamoDBClient, template: Mapping[str, Any], names: Mapping[str, str]) -> None:
    """Creates every table of the template under `names[logical id]`, with TTL; existing ones are kept.

    Idempotent, so concurrent test sessions and restarts of the local stack may all call it. It does not
    reconcile an existing table whose schema differs from the template (delete it to start over).
    """
    definitions = table_definitions(template)
    missing = set(definitions) - set(names)
    if missing:
        raise KeyError(f"no table name given for {sorted(missing)}")
    for logical_id, kwargs in definitions.items():
        name = names[logical_id]
        # ResourceInUse: created earlier, or by a concurrent caller.
        with contextlib.suppress(dynamodb.exceptions.ResourceInUseException):
            dynamodb.create_table(TableName=name, **kwargs)
        dynamodb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 60})
        attribute = ttl_attribute(template, logical_id)
        if attribute is not None:
            _enable_ttl(dynamodb, name, attribute)


def _enable_ttl(dynamodb: DynamoDBClient, table_name: str, attribute: str) -> None:
    current = dynamodb.describe_time_to_live(TableName=table_name)["TimeToLiveDescription"]
    if current.get("TimeToLiveStatus") in {"ENABLED", "ENABLING"}:
        return  # DynamoDB rejects enabling TTL twice
    dynamodb.update_time_to_live(
        TableName=table_name, TimeToLiveSpecification={"Enabled": True, "AttributeName": attribute}
    )
