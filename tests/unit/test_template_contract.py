"""Fails when template.yaml and the code disagree (STYLE.md habit 12: one source of truth)."""

from __future__ import annotations

import ast
import re
import tomllib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from moto import mock_aws

from hookline.adapters.dynamo import codec, job_store, tables
from hookline.adapters.dynamo.schedule_store import cron_live_shard, item_to_schedule, schedule_to_item
from hookline.domain import constants
from hookline.domain.cron.schedule import CatchUp, Schedule
from hookline.domain.models import FlowControl, Job, JobStatus
from hookline.domain.reconcile import LiveJob
from hookline.plumbing.settings import Settings
from hookline_local.template import (
    CloudFormationLoader,
    api_routes,
    create_tables,
    find_template,
    function_environment,
    function_handler,
    function_ids,
    function_timeout_s,
    load_template,
    schedules,
    table_definitions,
    table_names,
    ttl_attribute,
)
from tests.support.aws import patch_fake_credentials

TEMPLATE_PATH = find_template()
REPO = TEMPLATE_PATH.parent
# Set by the Lambda runtime itself; a template may not set them.
RUNTIME_VARIABLES = {"AWS_REGION", "AWS_DEFAULT_REGION"}


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template(TEMPLATE_PATH)


class _RecordingEnv(dict[str, str]):
    """An empty environment that remembers every variable name looked up in it."""

    def __init__(self) -> None:
        super().__init__()
        self.read: set[str] = set()

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> str:
        self.read.add(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self.read.add(str(key))
        return super().__contains__(key)


def _variables_settings_read() -> set[str]:
    env = _RecordingEnv()
    Settings.from_env(env)
    return env.read - RUNTIME_VARIABLES


def _key_schema(definition: dict[str, Any]) -> dict[str, str]:
    return {key["KeyType"]: key["AttributeName"] for key in definition["KeySchema"]}


def _resolve_with_parameter_defaults(template: dict[str, Any], value: Any) -> str | None:
    """Returns the value a deploy with default parameters would give, or None for anything but a Ref."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and set(value) == {"Ref"} and value["Ref"] in template["Parameters"]:
        return str(template["Parameters"][value["Ref"]].get("Default", ""))
    return None


# --- loader ---------------------------------------------------------------------------------------


def test_given_short_tags_when_loading_yaml_then_each_becomes_its_long_form() -> None:
    text = """
    a: !Ref Thing
    b: !GetAtt Cache.Endpoint.Address
    c: !Sub "x-${AWS::Region}"
    d: !If [Cond, !Select [0, !GetAZs ""], !Join ["-", [!Base64 v, !ImportValue e]]]
    e: !And [!Equals [1, 1], !Not [!Condition C], !Or [!Condition D]]
    f: !Split [",", !FindInMap [M, K, V]]
    g: !Cidr [10.0.0.0/16, 2, 8]
    """

    loaded = yaml.load(text, Loader=CloudFormationLoader)

    assert loaded["a"] == {"Ref": "Thing"}
    assert loaded["b"] == {"Fn::GetAtt": ["Cache", "Endpoint.Address"]}
    assert loaded["c"] == {"Fn::Sub": "x-${AWS::Region}"}
    assert loaded["d"] == {
        "Fn::If": [
            "Cond",
            {"Fn::Select": [0, {"Fn::GetAZs": ""}]},
            {"Fn::Join": ["-", [{"Fn::Base64": "v"}, {"Fn::ImportValue": "e"}]]},
        ]
    }
    assert loaded["e"] == {
        "Fn::And": [
            {"Fn::Equals": [1, 1]},
            {"Fn::Not": [{"Condition": "C"}]},
            {"Fn::Or": [{"Condition": "D"}]},
        ]
    }
    assert loaded["f"] == {"Fn::Split": [",", {"Fn::FindInMap": ["M", "K", "V"]}]}
    assert loaded["g"] == {"Fn::Cidr": ["10.0.0.0/16", 2, 8]}


def test_given_unknown_tag_when_loading_yaml_then_it_is_rejected() -> None:
    with pytest.raises(yaml.constructor.ConstructorError):
        yaml.load("a: !Bogus x", Loader=CloudFormationLoader)


# --- tables ---------------------------------------------------------------------------------------


def test_given_jobs_table_when_compared_with_tables_module_then_keys_index_and_ttl_match(
    template: dict[str, Any],
) -> None:
    jobs = table_definitions(template)["JobsTable"]

    assert _key_schema(jobs) == {"HASH": tables.JOBS_PK, "RANGE": tables.JOBS_SK}
    [live] = jobs["GlobalSecondaryIndexes"]
    assert live["IndexName"] == tables.LIVE_INDEX
    assert _key_schema(live) == {"HASH": tables.LIVE_PK, "RANGE": tables.LIVE_SK}
    assert live["Projection"]["ProjectionType"] == "INCLUDE"
    assert sorted(live["Projection"]["NonKeyAttributes"]) == sorted(
        set(tables.LIVE_JOB_ATTRIBUTES) | set(tables.LIVE_SCHEDULE_ATTRIBUTES)
    )
    types = {a["AttributeName"]: a["AttributeType"] for a in jobs["AttributeDefinitions"]}
    assert types == {tables.JOBS_PK: "S", tables.JOBS_SK: "S", tables.LIVE_PK: "S", tables.LIVE_SK: "N"}
    assert ttl_attribute(template, "JobsTable") == tables.TTL_ATTRIBUTE


def test_given_the_due_scan_s_filter_then_it_reads_only_attributes_the_live_index_projects() -> None:
    """DynamoDB filters a GSI query on what the index holds: the running jobs' lease must be projected."""
    names = job_store.RUNNING_JOB_DUE_BY_HORIZON
    attributes = set(codec.attribute_names(job_store._NAMES, names).values())

    assert attributes == {"status", "lease_expires_at_ms"}
    assert attributes <= set(tables.LIVE_JOB_ATTRIBUTES)


def test_given_attempt_1_s_record_in_the_job_item_then_it_is_kept_no_shorter_than_an_execution_item() -> None:
    # tables.FIRST_EXECUTION expires with the job item, which ends after the attempt did.
    assert constants.TERMINAL_JOB_RETENTION_S >= constants.EXECUTION_RETENTION_S


def test_given_executions_table_when_compared_with_tables_module_then_keys_and_ttl_match(
    template: dict[str, Any],
) -> None:
    executions = table_definitions(template)["ExecutionsTable"]

    assert _key_schema(executions) == {"HASH": tables.EXECUTIONS_PK, "RANGE": tables.EXECUTIONS_SK}
    types = {a["AttributeName"]: a["AttributeType"] for a in executions["AttributeDefinitions"]}
    assert types == {tables.EXECUTIONS_PK: "S", tables.EXECUTIONS_SK: "N"}
    assert "GlobalSecondaryIndexes" not in executions
    assert ttl_attribute(template, "ExecutionsTable") == tables.TTL_ATTRIBUTE


def test_given_api_keys_table_when_compared_with_tables_module_then_key_matches(
    template: dict[str, Any],
) -> None:
    api_keys = table_definitions(template)["ApiKeysTable"]

    assert _key_schema(api_keys) == {"HASH": tables.API_KEYS_PK}
    assert api_keys["AttributeDefinitions"] == [{"AttributeName": tables.API_KEYS_PK, "AttributeType": "S"}]


def test_given_template_when_listing_tables_then_exactly_the_three_known_tables_exist(
    template: dict[str, Any],
) -> None:
    assert set(table_definitions(template)) == set(table_names(Settings()))


# --- environment ----------------------------------------------------------------------------------


def test_given_settings_when_reading_env_then_every_variable_is_set_for_every_function(
    template: dict[str, Any],
) -> None:
    read = _variables_settings_read()
    assert "HOOKLINE_REDIS_URL" in read  # the recording env works

    for function_id in function_ids(template):
        missing = read - set(function_environment(template, function_id))
        assert not missing, f"{function_id} lacks {sorted(missing)}"


def test_given_table_variables_when_settings_read_them_then_each_names_its_template_table(
    template: dict[str, Any],
) -> None:
    env = function_environment(template, "SubmitFunction")
    table_refs = {
        name: value["Ref"]
        for name, value in env.items()
        if isinstance(value, dict) and value.get("Ref") in table_definitions(template)
    }

    settings = Settings.from_env({name: f"name-of-{table}" for name, table in table_refs.items()})

    assert table_names(settings) == {table: f"name-of-{table}" for table in table_definitions(template)}


def test_given_default_parameters_when_settings_read_them_then_tunables_equal_code_defaults(
    template: dict[str, Any],
) -> None:
    env = function_environment(template, "SubmitFunction")
    resolved = {name: _resolve_with_parameter_defaults(template, value) for name, value in env.items()}

    deployed = Settings.from_env({name: value for name, value in resolved.items() if value is not None})

    default = Settings()
    for field in (
        "redis_cluster",
        "shards",
        "allow_loopback",
        "executor_concurrency",
        "redeliver_after_ms",
        "max_deliveries",
        "lease_ms",
        "lease_margin_ms",
        "lease_renew_below_ms",
        "heartbeat_ms",
        "recover_every_ms",
        "promoter_max_sleep_ms",
        "max_executors",
        "tenant_max_concurrency",
        "aws_endpoint_url",
    ):
        assert getattr(deployed, field) == getattr(default, field), field


KEYS_TABLE = {"Fn::GetAtt": ["ApiKeysTable", "Arn"]}
UNINDEXED_KEYS = [f"{tables.UNINDEXED_KEY_PREFIX}*"]


def keys_table_statements(template: dict[str, Any], function_id: str) -> list[dict[str, Any]]:
    """Returns the function's own statements on the API keys table (not its managed policies)."""
    policies = template["Resources"][function_id]["Properties"]["Policies"]
    statements = [st for policy in policies if "Statement" in policy for st in policy["Statement"]]
    return [st for st in statements if st["Resource"] == KEYS_TABLE]


@pytest.mark.parametrize("function_id", ["PromoteFunction", "ReapFunction"])
def test_given_shard_count_policy_when_compared_with_tables_module_then_it_names_only_the_count_items(
    template: dict[str, Any], function_id: str
) -> None:
    on_keys_table = keys_table_statements(template, function_id)

    assert [
        st["Condition"]["ForAllValues:StringEquals"]["dynamodb:LeadingKeys"]
        for st in on_keys_table
        if "ForAllValues:StringEquals" in st["Condition"]
    ] == [[tables.SHARD_COUNT_KEY, tables.BUCKET_COUNT_KEY]]


def test_given_the_api_function_when_it_is_the_first_to_start_then_it_may_record_the_bucket_count(
    template: dict[str, Any],
) -> None:
    on_keys_table = keys_table_statements(template, "SubmitFunction")

    assert [
        st["Action"]
        for st in on_keys_table
        if st["Condition"].get("ForAllValues:StringEquals", {}).get("dynamodb:LeadingKeys")
        == [tables.BUCKET_COUNT_KEY]
    ] == [["dynamodb:PutItem"]]


@pytest.mark.parametrize(
    ("function_id", "actions"),
    [
        ("SubmitFunction", ["dynamodb:UpdateItem"]),
        ("PromoteFunction", ["dynamodb:UpdateItem"]),
        ("ExecuteFunction", ["dynamodb:UpdateItem"]),
        ("ReapFunction", ["dynamodb:BatchGetItem", "dynamodb:DeleteItem"]),
    ],
)
def test_given_unindexed_notes_when_compared_with_tables_module_then_writers_note_and_the_reaper_clears(
    template: dict[str, Any], function_id: str, actions: list[str]
) -> None:
    on_notes = [
        st
        for st in keys_table_statements(template, function_id)
        if st.get("Condition", {}).get("ForAllValues:StringLike", {}).get("dynamodb:LeadingKeys")
        == UNINDEXED_KEYS
    ]

    assert [st["Action"] for st in on_notes] == [actions]


def test_given_fan_out_variable_when_compared_with_execute_function_then_names_match(
    template: dict[str, Any],
) -> None:
    env = function_environment(template, "PromoteFunction")
    execute = template["Resources"]["ExecuteFunction"]["Properties"]

    assert env["HOOKLINE_EXECUTE_FUNCTION"] == execute["FunctionName"]


def test_given_wake_variable_when_compared_with_promote_function_then_names_match(
    template: dict[str, Any],
) -> None:
    env = function_environment(template, "SubmitFunction")
    promote = template["Resources"]["PromoteFunction"]["Properties"]

    assert env["HOOKLINE_PROMOTE_FUNCTION"] == promote["FunctionName"]


@pytest.mark.parametrize(
    "function_id", ["SubmitFunction", "PromoteFunction", "ExecuteFunction", "ReapFunction"]
)
def test_given_function_that_indexes_when_listing_policies_then_it_may_invoke_the_promoter(
    template: dict[str, Any], function_id: str
) -> None:
    # Every function indexes jobs (submit, cron firings, retries, reconcile), and an index call of a job
    # due soon while no promoter runs invokes one (idle mode).
    policies = template["Resources"][function_id]["Properties"]["Policies"]
    invokable = [
        policy["LambdaInvokePolicy"]["FunctionName"] for policy in policies if "LambdaInvokePolicy" in policy
    ]

    assert template["Resources"]["PromoteFunction"]["Properties"]["FunctionName"] in invokable


def test_given_reap_wake_variable_when_compared_with_reap_function_then_names_match(
    template: dict[str, Any],
) -> None:
    env = function_environment(template, "SubmitFunction")
    reap = template["Resources"]["ReapFunction"]["Properties"]

    assert env["HOOKLINE_REAP_FUNCTION"] == reap["FunctionName"]


@pytest.mark.parametrize("function_id", ["SubmitFunction", "PromoteFunction", "ExecuteFunction"])
def test_given_function_that_notes_unindexed_jobs_when_listing_policies_then_it_may_invoke_the_reaper(
    template: dict[str, Any], function_id: str
) -> None:
    policies = template["Resources"][function_id]["Properties"]["Policies"]
    invokable = [p["LambdaInvokePolicy"]["FunctionName"] for p in policies if "LambdaInvokePolicy" in p]

    assert template["Resources"]["ReapFunction"]["Properties"]["FunctionName"] in invokable


def test_given_idle_settings_when_read_from_template_then_the_horizon_exceeds_the_promote_schedule(
    template: dict[str, Any],
) -> None:
    env = function_environment(template, "PromoteFunction")
    rate_s = {spec.function_id: spec.rate_s for spec in schedules(template)}["PromoteFunction"]
    settings = Settings.from_env({name: str(value) for name, value in env.items() if isinstance(value, str)})

    policy = settings.idle_policy()

    assert policy.enabled
    assert policy.horizon_ms > rate_s * 1000
    assert settings.executor_idle_ms > 0


def test_given_metric_alarms_when_compared_with_powertools_env_then_namespace_and_service_match(
    template: dict[str, Any],
) -> None:
    env = function_environment(template, "SubmitFunction")
    namespace, service = env["POWERTOOLS_METRICS_NAMESPACE"], env["POWERTOOLS_SERVICE_NAME"]
    alarms = {
        logical_id: resource["Properties"]
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::CloudWatch::Alarm"
        # Hookline's own metrics; AWS's (AWS/Lambda errors, AWS/EC2 for the NAT instance) have their own.
        and not str(resource["Properties"]["Namespace"]).startswith("AWS/")
    }

    assert {a["MetricName"] for a in alarms.values()} >= {"DeadLettered", "ScheduleLagMs", "RedisOutOfMemory"}
    for logical_id, alarm in alarms.items():
        assert alarm["Namespace"] == namespace, logical_id
        assert alarm["Dimensions"] == [{"Name": "service", "Value": service}], logical_id


def _metric_names_emitted_by_code() -> set[str]:
    names = set()
    for path in [*(REPO / "layers/core/hookline").rglob("*.py"), *(REPO / "functions").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in {"count", "timing_ms", "gauge"}
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                names.add(node.args[0].value)
    return names


def test_given_alarms_and_dashboard_when_naming_metrics_then_the_code_emits_each_of_them(
    template: dict[str, Any],
) -> None:
    namespace = function_environment(template, "SubmitFunction")["POWERTOOLS_METRICS_NAMESPACE"]
    resources = template["Resources"].values()
    alarmed = {
        r["Properties"]["MetricName"]
        for r in resources
        if r["Type"] == "AWS::CloudWatch::Alarm" and r["Properties"]["Namespace"] == namespace
    }
    [dashboard] = [r for r in resources if r["Type"] == "AWS::CloudWatch::Dashboard"]
    charted = set(
        re.findall(rf'\["{namespace}", "(\w+)"', dashboard["Properties"]["DashboardBody"]["Fn::Sub"])
    )

    assert charted, "the dashboard charts no Hookline metric"
    assert (alarmed | charted) - _metric_names_emitted_by_code() == set()


# --- functions, routes, schedules -----------------------------------------------------------------


def _defines_function(path: Path, name: str) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return any(isinstance(node, ast.FunctionDef) and node.name == name for node in tree.body)


@pytest.mark.parametrize("function_id", function_ids(load_template(TEMPLATE_PATH)))
def test_given_function_when_resolving_its_handler_then_the_file_defines_it(function_id: str) -> None:
    handler_file, handler_name = function_handler(load_template(TEMPLATE_PATH), function_id)

    path = REPO / handler_file
    assert path.is_file(), f"{function_id}: {handler_file} does not exist"
    assert _defines_function(path, handler_name), f"{function_id}: {handler_file} has no {handler_name}()"


def test_given_api_routes_when_listed_then_each_method_and_path_is_unique(template: dict[str, Any]) -> None:
    routes = api_routes(template)

    counts = Counter((route.method, route.path) for route in routes)
    assert not [key for key, count in counts.items() if count > 1]
    assert ("POST", "/v1/jobs") in counts
    assert ("GET", "/healthz") in counts


def test_given_schedules_when_listed_then_promote_and_reap_run_every_minute_and_execute_never(
    template: dict[str, Any],
) -> None:
    rates = {spec.function_id: spec.rate_s for spec in schedules(template)}

    # Executors run only when there is work: the promoter starts them (usecases/scale.py).
    assert rates == {"PromoteFunction": 60, "ReapFunction": 60}


def test_given_promote_timeout_when_compared_with_its_schedule_then_invocations_overlap(
    template: dict[str, Any],
) -> None:
    rate_s = {spec.function_id: spec.rate_s for spec in schedules(template)}["PromoteFunction"]
    running_s = function_timeout_s(template, "PromoteFunction") - constants.INVOCATION_SAFETY_MARGIN_MS / 1000

    assert running_s > rate_s  # otherwise no promoter runs between two ticks and jobs fire late


def test_given_execute_timeout_when_longest_callback_must_fit_then_one_executor_always_claims(
    template: dict[str, Any],
) -> None:
    # No schedule starts executors any more; the window still outlasts the promoter's minute, so an
    # executor started while work lasts reads until the next promoter can start another.
    rate_s = {spec.function_id: spec.rate_s for spec in schedules(template)}["PromoteFunction"]
    timeout_s = function_timeout_s(template, "ExecuteFunction")

    # The executor claims only while the longest callback plus its wrap-up still fits in its
    # remaining time (RESERVE_MS in functions/execute/app.py).
    claiming_window_s = timeout_s - constants.MAX_TIMEOUT_S - constants.ATTEMPT_WRAP_UP_S
    assert claiming_window_s > rate_s
    # The fan-out counts a started executor as running for its claiming window.
    assert timeout_s == constants.EXECUTE_FUNCTION_TIMEOUT_S
    assert claiming_window_s * 1000 == constants.EXECUTOR_READ_MS


# --- layer ----------------------------------------------------------------------------------------


def _requirement_names(lines: list[str]) -> set[str]:
    return {line.split(";")[0].strip().lower() for line in lines if line.strip() and not line.startswith("#")}


# The runtime provides boto3; hookline-client's models are copied into the layer from client/ (its own
# dependencies, httpx and pydantic, are the server's too), its `hookline` command left out.
NOT_IN_LAYER = ("boto3", "hookline-client")


def test_given_layer_requirements_when_compared_with_pyproject_then_they_match_but_boto3_and_client() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    layer = (REPO / "layers/core/requirements.txt").read_text(encoding="utf-8").splitlines()

    expected = {
        dep.split("#")[0].strip().lower()
        for dep in pyproject["project"]["dependencies"]
        if not dep.startswith(NOT_IN_LAYER)
    }
    assert _requirement_names(layer) == expected


# --- tables in moto -------------------------------------------------------------------------------


@pytest.fixture
def dynamodb(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    patch_fake_credentials(monkeypatch)
    with mock_aws():
        yield boto3.client("dynamodb", region_name="us-east-1")


NAMES = {"JobsTable": "t-jobs", "ExecutionsTable": "t-executions", "ApiKeysTable": "t-api-keys"}


def test_given_template_when_creating_tables_twice_then_all_exist_with_ttl(
    template: dict[str, Any], dynamodb: Any
) -> None:
    create_tables(dynamodb, template, NAMES)
    create_tables(dynamodb, template, NAMES)  # idempotent

    assert sorted(dynamodb.list_tables()["TableNames"]) == sorted(NAMES.values())
    for logical_id, name in NAMES.items():
        ttl = dynamodb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
        if ttl_attribute(template, logical_id) is None:
            assert ttl["TimeToLiveStatus"] == "DISABLED"
        else:
            assert ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": tables.TTL_ATTRIBUTE}


def test_given_created_tables_when_writing_a_live_job_then_get_and_live_index_query_find_it(
    template: dict[str, Any], dynamodb: Any
) -> None:
    create_tables(dynamodb, template, NAMES)
    key = {tables.JOBS_PK: {"S": "tenant-a"}, tables.JOBS_SK: {"S": tables.job_sk("01J0000000")}}
    live = {tables.LIVE_PK: {"S": "0"}, tables.LIVE_SK: {"N": "1700000000000"}}

    dynamodb.put_item(TableName=NAMES["JobsTable"], Item={**key, **live, "status": {"S": "scheduled"}})
    got = dynamodb.get_item(TableName=NAMES["JobsTable"], Key=key)["Item"]
    found = dynamodb.query(
        TableName=NAMES["JobsTable"],
        IndexName=tables.LIVE_INDEX,
        KeyConditionExpression="#shard = :shard AND #due <= :now",
        ExpressionAttributeNames={"#shard": tables.LIVE_PK, "#due": tables.LIVE_SK},
        ExpressionAttributeValues={":shard": {"S": "0"}, ":now": {"N": "1700000000001"}},
    )["Items"]

    assert got["status"] == {"S": "scheduled"}
    assert [item[tables.JOBS_SK] for item in found] == [key[tables.JOBS_SK]]


def test_given_created_tables_when_writing_execution_and_key_items_then_they_read_back(
    template: dict[str, Any], dynamodb: Any
) -> None:
    create_tables(dynamodb, template, NAMES)
    execution = {
        tables.EXECUTIONS_PK: {"S": tables.execution_pk("tenant-a", "01J0000000")},
        tables.EXECUTIONS_SK: {"N": "1"},
    }
    api_key = {tables.API_KEYS_PK: {"S": "key-1"}}

    dynamodb.put_item(TableName=NAMES["ExecutionsTable"], Item={**execution, "status_code": {"N": "200"}})
    dynamodb.put_item(TableName=NAMES["ApiKeysTable"], Item={**api_key, "tenant": {"S": "tenant-a"}})

    got = dynamodb.get_item(TableName=NAMES["ExecutionsTable"], Key=execution)["Item"]
    assert got["status_code"] == {"N": "200"}
    got = dynamodb.get_item(TableName=NAMES["ApiKeysTable"], Key=api_key)["Item"]
    assert got["tenant"] == {"S": "tenant-a"}


def test_given_missing_table_name_when_creating_tables_then_nothing_is_created(
    template: dict[str, Any], dynamodb: Any
) -> None:
    with pytest.raises(KeyError, match="ApiKeysTable"):
        create_tables(dynamodb, template, {k: v for k, v in NAMES.items() if k != "ApiKeysTable"})

    assert dynamodb.list_tables()["TableNames"] == []


def test_given_live_job_and_schedule_when_read_from_live_index_then_only_what_reconciliation_reads_comes(
    template: dict[str, Any], dynamodb: Any
) -> None:
    create_tables(dynamodb, template, NAMES)
    job = Job(
        tenant="tenant-a",
        job_id="01J0000000",
        status=JobStatus.RUNNING,
        generation=3,
        attempt=1,
        max_attempts=5,
        url="https://example.com/hook",
        method="POST",
        headers={"x-big": "h" * 1000},
        body="b" * 200_000,
        due_ms=1_700_000_000_000,
        created_ms=1_699_999_000_000,
        updated_ms=1_700_000_000_000,
        min_backoff_ms=1000,
        max_backoff_ms=60_000,
        timeout_ms=30_000,
        shard=0,
        flow=FlowControl("partner", 5, 1000, "db", 2),
        lease_expires_at_ms=1_700_000_060_000,
    )
    schedule = Schedule(
        tenant="tenant-a",
        schedule_id="01S0000000",
        expression="*/5 * * * *",
        timezone="Europe/London",
        job={"url": "https://example.com/report", "body": {"k": 1}},
        catch_up=CatchUp.SKIP,
        paused=False,
        version=2,
        shard=0,
        created_ms=1_699_000_000_000,
        updated_ms=1_699_500_000_000,
    )
    keyspace = tables.Keyspace()
    dynamodb.put_item(TableName=NAMES["JobsTable"], Item=codec.job_to_item(job, keyspace))
    dynamodb.put_item(TableName=NAMES["JobsTable"], Item=schedule_to_item(schedule, 1_700_000_300_000))

    jobs_page, _ = codec.live_index_page(
        dynamodb, NAMES["JobsTable"], keyspace.live_pk(0, job.job_id), None, 10
    )
    schedules_page, _ = codec.live_index_page(dynamodb, NAMES["JobsTable"], cron_live_shard(0), None, 10)

    [job_item] = jobs_page
    assert "body" not in job_item and "headers" not in job_item and "url" not in job_item
    assert codec.item_to_live_job(job_item) == LiveJob(
        "tenant-a", job.job_id, JobStatus.RUNNING, 3, job.due_ms, 0, job.flow, job.lease_expires_at_ms
    )
    assert [item_to_schedule(item) for item in schedules_page] == [schedule]
