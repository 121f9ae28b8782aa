"""The deploy step's pure parts: packaging, the API URL on an emulator, first ticks, parameters."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from hookline_local.deploy import (
    Deployed,
    DeployError,
    endpoint_api_url,
    package,
    parse_parameters,
    read_deployed,
    scheduled_functions,
    template_python_version,
    write_deployed,
    zip_directory,
)
from hookline_local.deployed import stack_parameters
from hookline_local.stack import StackOptions, stack_environment
from hookline_local.template import find_template, load_template


def test_given_api_url_output_when_mapped_then_emulator_execute_api_path_with_stage() -> None:
    url = endpoint_api_url(
        "https://0a1b2c3d.execute-api.us-east-1.amazonaws.com/dev", "http://127.0.0.1:4566/"
    )

    assert url == "http://127.0.0.1:4566/_aws/execute-api/0a1b2c3d/dev"


def test_given_http_api_url_output_without_a_stage_when_mapped_then_emulator_execute_api_path_alone() -> None:
    url = endpoint_api_url("https://0a1b2c3d.execute-api.us-east-1.amazonaws.com", "http://127.0.0.1:4566")

    assert url == "http://127.0.0.1:4566/_aws/execute-api/0a1b2c3d"


def test_given_output_that_is_not_an_api_url_when_mapped_then_deploy_error() -> None:
    with pytest.raises(DeployError):
        endpoint_api_url("http://127.0.0.1:3000", "http://127.0.0.1:4566")


def test_given_template_then_the_scheduled_functions_are_promote_and_reap() -> None:
    # Executors run only when there is work: the promoter starts them.
    assert scheduled_functions(load_template(find_template())) == ["PromoteFunction", "ReapFunction"]


def test_given_function_folder_when_zipped_then_relative_paths_without_pycache(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "__pycache__").mkdir(parents=True)
    (tmp_path / "app.py").write_text("handler = None\n")
    (tmp_path / "pkg" / "mod.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"\0")

    names = zipfile.ZipFile(io.BytesIO(zip_directory(tmp_path))).namelist()

    assert names == ["app.py", "pkg/mod.py"]


@pytest.mark.usefixtures("fake_aws_credentials")
def test_given_artifacts_when_packaged_then_uris_name_uploaded_objects_and_the_source_is_unchanged(
    tmp_path: Path,
) -> None:
    template = load_template(find_template())
    (tmp_path / "app.py").write_text("def handler(event, context): return event\n")
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        packaged = package(template, {"SubmitFunction": tmp_path, "CoreLayer": tmp_path}, s3, "artifacts")

        code_uri = packaged["Resources"]["SubmitFunction"]["Properties"]["CodeUri"]
        content_uri = packaged["Resources"]["CoreLayer"]["Properties"]["ContentUri"]
        keys = {item["Key"] for item in s3.list_objects_v2(Bucket="artifacts")["Contents"]}

    assert code_uri.startswith("s3://artifacts/SubmitFunction-") and code_uri.endswith(".zip")
    assert {code_uri.removeprefix("s3://artifacts/"), content_uri.removeprefix("s3://artifacts/")} == keys
    assert template["Resources"]["SubmitFunction"]["Properties"]["CodeUri"] == "functions/submit/"


def test_given_refuse_loopback_then_both_stacks_deploy_with_loopback_callbacks_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HOOKLINE_ALLOW_LOOPBACK", raising=False)

    deployed = stack_parameters("redis://127.0.0.1:6390/0", "http://127.0.0.1:4566", allow_loopback=False)
    hand_wired = stack_environment(StackOptions(allow_loopback=False), "http://127.0.0.1:5055")

    assert deployed["AllowLoopback"] == "false"
    assert deployed["Egress"] == "None"
    assert deployed["MaxExecutors"] == str(StackOptions().max_executors)  # both stacks fan out alike
    assert hand_wired["HOOKLINE_ALLOW_LOOPBACK"] == "false"
    assert stack_parameters("redis://x", "http://y", allow_loopback=True)["AllowLoopback"] == "true"


def test_given_deployed_stack_when_written_then_read_back_equal(tmp_path: Path) -> None:
    deployed = Deployed(
        stack_name="hookline",
        outputs={"ApiUrl": "https://abc.execute-api.us-east-1.amazonaws.com/dev"},
        api_url="http://127.0.0.1:4566/_aws/execute-api/abc/dev",
        functions={"SubmitFunction": "hookline-SubmitFunction-1"},
    )
    write_deployed(deployed, tmp_path / "out" / "deployed.json")
    assert read_deployed(tmp_path / "out" / "deployed.json") == deployed


def test_given_pairs_when_parsed_then_parameters_and_a_pair_without_equals_is_refused() -> None:
    assert parse_parameters(["A=1", "B=x=y", "C="]) == {"A": "1", "B": "x=y", "C": ""}
    with pytest.raises(DeployError, match="NAME=VALUE"):
        parse_parameters(["A"])


def test_given_template_then_its_runtime_names_the_layer_wheels_python() -> None:
    assert template_python_version({"Globals": {"Function": {"Runtime": "python3.12"}}}) == "3.12"
    with pytest.raises(DeployError, match="no Python runtime"):
        template_python_version({"Globals": {"Function": {"Runtime": "nodejs20.x"}}})


def test_given_template_over_the_inline_limit_when_uploaded_then_create_stack_gets_its_url() -> None:
    import json

    import boto3
    from moto import mock_aws

    from hookline_local.deploy import upload_template

    template = load_template(find_template())
    template["Description"] = "x" * 60_000  # past CloudFormation's 51,200-byte TemplateBody limit
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="artifacts")
        url = upload_template(template, s3, "artifacts", "http://127.0.0.1:4566/")
        bucket, key = url.removeprefix("http://127.0.0.1:4566/").split("/", 1)
        stored = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())

    assert bucket == "artifacts"
    assert key.startswith("template-") and key.endswith(".json")
    assert stored == template
