"""The small configuration (CacheKind=SingleNode, Egress=None, TableBilling=Provisioned) deployed by
`hookline dev --parameter ...` on the embedded emulator: its tables are provisioned, and a job goes from
submit to callback through them.

Capacity is fixed (each minimum equals its maximum), so the stack has no Application Auto Scaling
resources, which the emulator does not provide; nor does it provide a NAT gateway or instance, or
ElastiCache Serverless, so Egress=NatGateway/NatInstance and CacheKind=Serverless are checked by
tests/unit/test_template_configurations.py only. The cache itself is the local redis-server
(RedisUrlOverride), as in every local deployment.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest

from tests.e2e.dev_stack import DEPLOYED, DevStack, assert_stops_cleanly
from tests.support.receiver import Receiver

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]
CALLBACK_TIMEOUT_S = 60.0
UNITS = 5
SMALL = {
    "CacheKind": "SingleNode",
    "Egress": "None",
    "TableBilling": "Provisioned",
    "TableReadCapacityMin": str(UNITS),
    "TableReadCapacityMax": str(UNITS),
    "TableWriteCapacityMin": str(UNITS),
    "TableWriteCapacityMax": str(UNITS),
}


@pytest.fixture(scope="module")
def small_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    args = tuple(arg for name, value in SMALL.items() for arg in ("--parameter", f"{name}={value}"))
    with DevStack(Path(tmp_path_factory.mktemp("small-stack")), DEPLOYED, args) as running:
        yield running
        assert_stops_cleanly(running, signal.SIGINT, group=True)


def _dynamodb(environment: dict[str, str]) -> Any:
    return boto3.client(
        "dynamodb",
        endpoint_url=environment["HOOKLINE_AWS_ENDPOINT"],
        region_name=environment["AWS_REGION"],
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )


def test_given_provisioned_billing_then_every_table_and_the_index_have_the_fixed_capacity(
    small_stack: DevStack,
) -> None:
    environment = small_stack.environment()
    dynamodb = _dynamodb(environment)
    names = ("HOOKLINE_JOBS_TABLE", "HOOKLINE_EXECUTIONS_TABLE", "HOOKLINE_API_KEYS_TABLE")

    for variable in names:
        table = dynamodb.describe_table(TableName=environment[variable])["Table"]
        assert table.get("BillingModeSummary", {}).get("BillingMode", "PROVISIONED") == "PROVISIONED"
        throughput = table["ProvisionedThroughput"]
        # int(): the emulator keeps the units as the parameter's string; DynamoDB answers numbers.
        assert (int(throughput["ReadCapacityUnits"]), int(throughput["WriteCapacityUnits"])) == (UNITS, UNITS)
    jobs = dynamodb.describe_table(TableName=environment["HOOKLINE_JOBS_TABLE"])["Table"]
    [live] = jobs["GlobalSecondaryIndexes"]
    assert int(live["ProvisionedThroughput"]["WriteCapacityUnits"]) == UNITS


def test_given_small_configuration_when_a_job_is_submitted_then_its_callback_arrives(
    small_stack: DevStack,
) -> None:
    environment = small_stack.environment()
    key = json.loads(small_stack.cli("keys", "create", "--tenant", "small-e2e", "--json"))["api_key"]
    headers = {"Authorization": f"Bearer {key}"}
    with (
        httpx.Client(base_url=environment["HOOKLINE_STACK_API_URL"], headers=headers, timeout=30) as api,
        Receiver() as receiver,
    ):
        submitted = api.post("/v1/jobs", json={"url": receiver.url("/small"), "body": {"n": 1}})
        assert submitted.status_code == 201, submitted.text

        [callback] = receiver.wait_for(1, timeout_s=CALLBACK_TIMEOUT_S)

    assert json.loads(callback.body) == {"n": 1}


def test_given_no_egress_on_the_emulator_then_fan_out_stays_on_since_its_endpoint_serves_lambda(
    small_stack: DevStack,
) -> None:
    environment = small_stack.environment()
    client = boto3.client(
        "lambda",
        endpoint_url=environment["HOOKLINE_AWS_ENDPOINT"],
        region_name=environment["AWS_REGION"],
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
    functions = client.list_functions()["Functions"]
    variables = [f["Environment"]["Variables"] for f in functions if f["FunctionName"].startswith("hookline")]

    assert len(variables) == 4
    # Egress=None alone would make it "0" (the Lambda API out of reach); AwsEndpointOverride keeps it.
    assert {v["HOOKLINE_MAX_EXECUTORS"] for v in variables} == {"4"}
    assert {v["HOOKLINE_REDIS_CLUSTER"] for v in variables} == {"false"}
