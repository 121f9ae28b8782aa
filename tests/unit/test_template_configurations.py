"""Every documented configuration of template.yaml (Egress x CacheKind x TableBilling, the cluster shapes and
the deprecated CreateNat) resolves to a template cfn-lint passes, with the resources the choice promises.

Conditions are resolved by hookline_local.conditions, as CloudFormation resolves them before it deploys, so
cfn-lint checks each configuration's own resources, not the union of every branch.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from typing import Any

import boto3
import pytest
from cfnlint.api import ManualArgs, lint
from moto import mock_aws

from bench.compare.costs import CONFIGURATIONS
from hookline_local.conditions import evaluate_conditions, parameter_values, resolve
from hookline_local.template import find_template, load_template, table_definitions

TEMPLATE = load_template(find_template())
EGRESS = ("NatGateway", "NatInstance", "None")
CACHE_KINDS = ("Replicated", "SingleNode", "Serverless")
BILLING = ("OnDemand", "Provisioned")
MATRIX = [
    {"Egress": egress, "CacheKind": cache, "TableBilling": billing}
    for egress, cache, billing in itertools.product(EGRESS, CACHE_KINDS, BILLING)
]
EXTRA = [
    {"CacheKind": "SingleNode", "RedisCluster": "true", "RedisNodeGroups": "3"},
    {"CacheKind": "Replicated", "RedisCluster": "true"},
    {"CreateNat": "false"},  # deprecated: Egress=None
    {"CreateNat": "false", "Egress": "NatInstance"},  # the alias wins
    {"TableBilling": "Provisioned", "TableReadCapacityMin": "5", "TableReadCapacityMax": "5"},
    {"TableBilling": "Provisioned", "TableWriteCapacityMin": "3", "TableWriteCapacityMax": "3",
     "TableReadCapacityMin": "2", "TableReadCapacityMax": "2"},
    {"CacheKind": "Serverless", "ServerlessEngine": "redis", "Egress": "None"},
    {"CacheKind": "SingleNode", "Egress": "None", "TableBilling": "Provisioned",
     "RedisUrlOverride": "redis://127.0.0.1:6379/0", "AwsEndpointOverride": "http://127.0.0.1:4566"},
]  # fmt: skip
CONFIGS = [*MATRIX, *EXTRA, *(c.parameters() for c in CONFIGURATIONS)]
TABLES = ("JobsTable", "ExecutionsTable", "ApiKeysTable")


def _distinct(configs: list[dict[str, str]]) -> list[dict[str, str]]:
    """Returns the configurations whose resolved templates differ (a node type alone changes none)."""
    seen: dict[str, dict[str, str]] = {}
    for parameters in configs:
        seen.setdefault(json.dumps(resolve(TEMPLATE, parameters), sort_keys=True), parameters)
    return list(seen.values())


LINTED = _distinct(CONFIGS)


def _id(parameters: Mapping[str, str]) -> str:
    return ",".join(f"{name}={value}" for name, value in parameters.items()) or "defaults"


def _of_type(resolved: Mapping[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in resolved["Resources"].items() if r["Type"] == resource_type}


def _environment(resolved: Mapping[str, Any]) -> dict[str, Any]:
    variables: dict[str, Any] = resolved["Globals"]["Function"]["Environment"]["Variables"]
    return variables


def _lint(resolved: Mapping[str, Any]) -> list[str]:
    matches = lint(json.dumps(resolved), config=ManualArgs(regions=["us-east-1"]))
    return [f"{m.rule.id} {m.path}: {m.message}" for m in matches]


# --- the resolver ------------------------------------------------------------------------------------

RESOLVER_TEMPLATE: dict[str, Any] = {
    "Parameters": {
        "Mode": {"Type": "String", "Default": "a", "AllowedValues": ["a", "b"]},
        "Size": {"Type": "Number", "Default": 3},
    },
    "Conditions": {
        "IsA": {"Fn::Equals": [{"Ref": "Mode"}, "a"]},
        "IsB": {"Fn::Not": [{"Condition": "IsA"}]},
        "Both": {"Fn::And": [{"Condition": "IsA"}, {"Fn::Equals": [{"Ref": "Size"}, "3"]}]},
        "Either": {"Fn::Or": [{"Condition": "IsB"}, {"Condition": "Both"}]},
    },
    "Resources": {
        "OnlyA": {"Type": "T", "Condition": "IsA", "Properties": {"Size": {"Ref": "Size"}}},
        "OnlyB": {"Type": "T", "Condition": "IsB"},
        "Always": {
            "Type": "T",
            "Properties": {
                "Picked": {"Fn::If": ["IsA", "yes", {"Ref": "AWS::NoValue"}]},
                "List": [1, {"Fn::If": ["IsB", 2, {"Ref": "AWS::NoValue"}]}, {"Ref": "OnlyA"}],
            },
        },
    },
    "Outputs": {"Out": {"Condition": "IsB", "Value": 1}},
}


def test_given_conditions_when_evaluated_then_equals_not_and_or_and_references_combine() -> None:
    assert evaluate_conditions(RESOLVER_TEMPLATE, parameter_values(RESOLVER_TEMPLATE)) == {
        "IsA": True,
        "IsB": False,
        "Both": True,
        "Either": True,
    }
    with_b = parameter_values(RESOLVER_TEMPLATE, {"Mode": "b", "Size": "4"})
    assert evaluate_conditions(RESOLVER_TEMPLATE, with_b) == {
        "IsA": False,
        "IsB": True,
        "Both": False,
        "Either": True,
    }


def test_given_template_when_resolved_then_false_entries_go_and_if_and_novalue_are_replaced() -> None:
    default = resolve(RESOLVER_TEMPLATE)
    other = resolve(RESOLVER_TEMPLATE, {"Mode": "b"}, substitute_parameters=True)

    assert set(default["Resources"]) == {"OnlyA", "Always"} and default["Outputs"] == {}
    assert "Conditions" not in default and "Condition" not in default["Resources"]["OnlyA"]
    assert default["Resources"]["Always"]["Properties"] == {"Picked": "yes", "List": [1, {"Ref": "OnlyA"}]}
    assert default["Resources"]["OnlyA"]["Properties"] == {"Size": {"Ref": "Size"}}
    assert set(other["Resources"]) == {"OnlyB", "Always"} and set(other["Outputs"]) == {"Out"}
    assert other["Resources"]["Always"]["Properties"] == {"List": [1, 2, {"Ref": "OnlyA"}]}
    assert resolve(RESOLVER_TEMPLATE, substitute_parameters=True)["Resources"]["OnlyA"]["Properties"] == {
        "Size": 3
    }


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"Mode": "c"}, "Mode='c' is not one of"),
        ({"Colour": "red"}, "no parameter \\['Colour'\\]"),
    ],
)
def test_given_bad_parameters_when_resolving_then_it_refuses_them(
    overrides: dict[str, str], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        resolve(RESOLVER_TEMPLATE, overrides)


def test_given_condition_cycle_or_unknown_function_then_the_resolver_names_the_condition() -> None:
    cyclic = {"Conditions": {"A": {"Condition": "B"}, "B": {"Condition": "A"}}, "Resources": {}}
    odd = {"Conditions": {"C": {"Fn::Contains": [["a"], "a"]}}, "Resources": {}}

    with pytest.raises(ValueError, match="condition A refers to itself"):
        evaluate_conditions(cyclic, {})
    with pytest.raises(ValueError, match="condition C: unsupported function Fn::Contains"):
        evaluate_conditions(odd, {})


# --- every configuration of template.yaml --------------------------------------------------------------


def test_given_a_broken_resolved_template_then_cfn_lint_reports_it() -> None:
    resolved = resolve(TEMPLATE)
    resolved["Resources"]["JobsTable"]["Properties"]["BillingMode"] = "FREE"

    assert any("BillingMode" in line for line in _lint(resolved))


@pytest.mark.parametrize("parameters", LINTED, ids=_id)
def test_given_configuration_when_resolved_then_cfn_lint_passes(parameters: dict[str, str]) -> None:
    assert _lint(resolve(TEMPLATE, parameters)) == []


@pytest.mark.parametrize("parameters", CONFIGS, ids=_id)
def test_given_configuration_then_its_egress_is_the_one_chosen(parameters: dict[str, str]) -> None:
    resolved = resolve(TEMPLATE, parameters)
    values = parameter_values(TEMPLATE, parameters)
    egress = "None" if values["CreateNat"] == "false" else values["Egress"]
    routes = {k: r["Properties"] for k, r in _of_type(resolved, "AWS::EC2::Route").items()}
    private = [r for r in routes.values() if r["RouteTableId"] == {"Ref": "PrivateRouteTable"}]
    max_executors = _environment(resolved)["HOOKLINE_MAX_EXECUTORS"]

    # The engine reaches DynamoDB through the gateway endpoint whatever the egress.
    [endpoint] = _of_type(resolved, "AWS::EC2::VPCEndpoint").values()
    assert endpoint["Properties"]["RouteTableIds"] == [{"Ref": "PrivateRouteTable"}]
    assert len(_of_type(resolved, "AWS::EC2::NatGateway")) == (egress == "NatGateway")
    assert len(_of_type(resolved, "AWS::EC2::Instance")) == (egress == "NatInstance")
    if egress == "None":
        assert private == [] and not _of_type(resolved, "AWS::EC2::InternetGateway")
        assert not _of_type(resolved, "AWS::EC2::EIP")
        assert max_executors == ("0" if not values["AwsEndpointOverride"] else {"Ref": "MaxExecutors"})
        return
    [route] = private
    assert route["DestinationCidrBlock"] == "0.0.0.0/0" and max_executors == {"Ref": "MaxExecutors"}
    if egress == "NatGateway":
        assert route == {**route, "NatGatewayId": {"Ref": "NatGateway"}} and "InstanceId" not in route
    else:
        instance = resolved["Resources"]["NatInstance"]["Properties"]
        assert route == {**route, "InstanceId": {"Ref": "NatInstance"}} and "NatGatewayId" not in route
        assert instance["SourceDestCheck"] is False
        assert instance["InstanceType"] == {"Ref": "NatInstanceType"}
        assert instance["SubnetId"] == {"Ref": "PublicSubnet"}
        assert len(_of_type(resolved, "AWS::EC2::EIP")) == 1


@pytest.mark.parametrize("parameters", CONFIGS, ids=_id)
def test_given_configuration_then_its_cache_is_the_kind_chosen(parameters: dict[str, str]) -> None:
    resolved = resolve(TEMPLATE, parameters)
    values = parameter_values(TEMPLATE, parameters)
    groups = _of_type(resolved, "AWS::ElastiCache::ReplicationGroup")
    serverless = _of_type(resolved, "AWS::ElastiCache::ServerlessCache")
    environment = _environment(resolved)
    kind, cluster = values["CacheKind"], values["RedisCluster"] == "true"

    if values["RedisUrlOverride"]:
        assert not groups and not serverless
        assert environment["HOOKLINE_REDIS_URL"] == {"Ref": "RedisUrlOverride"}
        return
    if kind == "Serverless":
        assert not groups and not _of_type(resolved, "AWS::ElastiCache::SubnetGroup")
        [cache] = serverless.values()
        assert cache["Properties"]["Engine"] == {"Ref": "ServerlessEngine"}
        assert cache["Properties"]["MajorEngineVersion"] == (
            "8" if values["ServerlessEngine"] == "valkey" else "7"
        )
        url = environment["HOOKLINE_REDIS_URL"]["Fn::Sub"]
        assert url == "rediss://${ServerlessCache.Endpoint.Address}:${ServerlessCache.Endpoint.Port}"
        assert environment["HOOKLINE_REDIS_CLUSTER"] == "true"
        assert "ServerlessCacheEndpoint" in resolved["Outputs"]
        return
    [group] = groups.values()
    properties = group["Properties"]
    single = kind == "SingleNode"
    assert not serverless and environment["HOOKLINE_REDIS_CLUSTER"] == ("true" if cluster else "false")
    assert environment["HOOKLINE_REDIS_URL"]["Fn::Sub"].startswith("rediss://")
    assert properties["MultiAZEnabled"] is not single
    if cluster:
        assert properties["ReplicasPerNodeGroup"] == (0 if single else 1)
        assert properties["NumNodeGroups"] == {"Ref": "RedisNodeGroups"}
    else:
        assert properties["NumCacheClusters"] == (1 if single else 2)
        assert properties["AutomaticFailoverEnabled"] is not single


@pytest.mark.parametrize("parameters", CONFIGS, ids=_id)
def test_given_configuration_then_its_tables_are_billed_as_chosen(parameters: dict[str, str]) -> None:
    resolved = resolve(TEMPLATE, parameters)
    values = parameter_values(TEMPLATE, parameters)
    targets = _of_type(resolved, "AWS::ApplicationAutoScaling::ScalableTarget")
    policies = _of_type(resolved, "AWS::ApplicationAutoScaling::ScalingPolicy")
    tables = [resolved["Resources"][table]["Properties"] for table in TABLES]
    index = tables[0]["GlobalSecondaryIndexes"][0]

    if values["TableBilling"] == "OnDemand":
        assert {t["BillingMode"] for t in tables} == {"PAY_PER_REQUEST"}
        assert not any("ProvisionedThroughput" in t for t in [*tables, index])
        assert not targets and not policies
        return
    throughput = {
        "ReadCapacityUnits": {"Ref": "TableReadCapacityMin"},
        "WriteCapacityUnits": {"Ref": "TableWriteCapacityMin"},
    }
    assert {t["BillingMode"] for t in tables} == {"PROVISIONED"}
    assert all(t["ProvisionedThroughput"] == throughput for t in [*tables, index])
    scaled = [
        dimension
        for dimension in ("Read", "Write")
        if values[f"Table{dimension}CapacityMin"] != values[f"Table{dimension}CapacityMax"]
    ]
    # A target and a policy per scaled dimension of each table and of the live index.
    assert len(targets) == len(policies) == 4 * len(scaled)
    settings = [p["Properties"]["TargetTrackingScalingPolicyConfiguration"] for p in policies.values()]
    assert {setting["TargetValue"] for setting in settings} == ({70} if scaled else set())
    dimensions = {t["Properties"]["ScalableDimension"].split(":")[-1] for t in targets.values()}
    assert dimensions == {f"{d}CapacityUnits" for d in scaled}
    assert {"dynamodb:index:ReadCapacityUnits", "dynamodb:index:WriteCapacityUnits"} & {
        t["Properties"]["ScalableDimension"] for t in targets.values()
    } == {f"dynamodb:index:{d}CapacityUnits" for d in scaled}


def test_given_provisioned_billing_then_the_local_stack_creates_its_tables_with_that_throughput() -> None:
    parameters = {"TableBilling": "Provisioned", "TableReadCapacityMin": "2", "TableWriteCapacityMin": "3"}
    definitions = table_definitions(TEMPLATE, parameters)

    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        for logical_id, kwargs in definitions.items():
            dynamodb.create_table(TableName=logical_id, **kwargs)
        jobs = dynamodb.describe_table(TableName="JobsTable")["Table"]

    assert jobs["ProvisionedThroughput"]["ReadCapacityUnits"] == 2
    assert jobs["ProvisionedThroughput"]["WriteCapacityUnits"] == 3
    assert jobs["GlobalSecondaryIndexes"][0]["ProvisionedThroughput"]["WriteCapacityUnits"] == 3
    assert table_definitions(TEMPLATE)["JobsTable"]["BillingMode"] == "PAY_PER_REQUEST"
    assert "ProvisionedThroughput" not in table_definitions(TEMPLATE)["JobsTable"]
