"""template.yaml's ApiKind parameter: Rest (the default) deploys the REST API exactly as before; Http adds an
HTTP API whose $default route sends every request to the submit function, and points ApiUrl at it.

Conditions are evaluated here for each value of ApiKind (Equals, Not, And, If, Ref of parameters), which is
all the template's conditions use; the deploy of ApiKind=Http itself is tests/e2e/test_http_api_stack.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from hookline_local.deploy import endpoint_api_url
from hookline_local.template import api_routes, find_template, load_template

HTTP_RESOURCES = {
    "HooklineHttpApi": "AWS::ApiGatewayV2::Api",
    "HooklineHttpApiIntegration": "AWS::ApiGatewayV2::Integration",
    "HooklineHttpApiRoute": "AWS::ApiGatewayV2::Route",
    "HooklineHttpApiStage": "AWS::ApiGatewayV2::Stage",
    "HooklineHttpApiPermission": "AWS::Lambda::Permission",
}
REST_URL = "https://${HooklineApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}/${Stage}"
HTTP_URL = "https://${HooklineHttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}"


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template(find_template())


def _parameters(template: dict[str, Any], **given: str) -> dict[str, str]:
    found = {name: str(spec.get("Default", "")) for name, spec in template["Parameters"].items()}
    return {**found, **given}


def _value(template: dict[str, Any], node: Any, parameters: dict[str, str]) -> Any:
    """Resolves the condition functions and parameter Refs in node; leaves every other intrinsic as is."""
    if isinstance(node, list):
        return [_value(template, item, parameters) for item in node]
    if not isinstance(node, dict):
        return node
    if len(node) == 1:
        [(name, argument)] = node.items()
        if name == "Ref" and argument in parameters:
            return parameters[argument]
        if name == "Condition":
            return _condition(template, argument, parameters)
        if name == "Fn::Equals":
            left, right = (_value(template, item, parameters) for item in argument)
            return left == right
        if name == "Fn::Not":
            return not _value(template, argument[0], parameters)
        if name == "Fn::And":
            return all(_value(template, item, parameters) for item in argument)
        if name == "Fn::If":
            condition, when_true, when_false = argument
            chosen = when_true if _condition(template, condition, parameters) else when_false
            return _value(template, chosen, parameters)
    return {key: _value(template, item, parameters) for key, item in node.items()}


def _condition(template: dict[str, Any], name: str, parameters: dict[str, str]) -> bool:
    return bool(_value(template, template["Conditions"][name], parameters))


def _deployed(template: dict[str, Any], **given: str) -> dict[str, Any]:
    """Returns the resources and outputs CloudFormation would create for these parameter values."""
    parameters = _parameters(template, **given)

    def kept(section: dict[str, Any]) -> dict[str, Any]:
        return {
            name: _value(template, body, parameters)
            for name, body in section.items()
            if "Condition" not in body or _condition(template, body["Condition"], parameters)
        }

    return {"Resources": kept(template["Resources"]), "Outputs": kept(template["Outputs"])}


def test_given_api_kind_parameter_then_rest_by_default_and_http_the_only_other_value(
    template: dict[str, Any],
) -> None:
    spec = template["Parameters"]["ApiKind"]

    assert (spec["Default"], spec["AllowedValues"]) == ("Rest", ["Rest", "Http"])


def test_given_default_parameters_then_the_rest_api_alone_serves_and_api_url_names_its_stage(
    template: dict[str, Any],
) -> None:
    deployed = _deployed(template)
    resources = deployed["Resources"]

    assert not set(HTTP_RESOURCES) & set(resources)
    assert not [name for name, body in resources.items() if body["Type"].startswith("AWS::ApiGatewayV2::")]
    assert resources["HooklineApi"]["Properties"]["DisableExecuteApiEndpoint"] is False
    assert deployed["Outputs"]["ApiUrl"]["Value"] == {"Fn::Sub": REST_URL}
    # Every route is still an event of the submit function on the REST API.
    events = resources["SubmitFunction"]["Properties"]["Events"]
    assert {event["Properties"]["RestApiId"]["Ref"] for event in events.values()} == {"HooklineApi"}
    assert len(api_routes(template)) == len(events)


def test_given_api_kind_http_then_an_http_api_with_a_default_route_to_the_submit_function(
    template: dict[str, Any],
) -> None:
    resources = _deployed(template, ApiKind="Http")["Resources"]

    assert {name: resources[name]["Type"] for name in HTTP_RESOURCES} == HTTP_RESOURCES
    assert resources["HooklineHttpApi"]["Properties"]["ProtocolType"] == "HTTP"
    integration = resources["HooklineHttpApiIntegration"]["Properties"]
    assert integration["IntegrationType"] == "AWS_PROXY"
    assert integration["PayloadFormatVersion"] == "2.0"
    assert integration["IntegrationUri"] == {"Fn::GetAtt": ["SubmitFunction", "Arn"]}
    # The function ends before API Gateway stops waiting, so its own errors reach the caller.
    assert integration["TimeoutInMillis"] / 1000 > resources["SubmitFunction"]["Properties"]["Timeout"]
    route = resources["HooklineHttpApiRoute"]["Properties"]
    assert route["RouteKey"] == "$default"
    assert route["Target"] == {"Fn::Sub": "integrations/${HooklineHttpApiIntegration}"}
    stage = resources["HooklineHttpApiStage"]["Properties"]
    assert (stage["StageName"], stage["AutoDeploy"]) == ("$default", True)
    permission = resources["HooklineHttpApiPermission"]["Properties"]
    assert permission["FunctionName"] == {"Ref": "SubmitFunction"}
    assert permission["Principal"] == "apigateway.amazonaws.com"
    assert "${HooklineHttpApi}/*" in permission["SourceArn"]["Fn::Sub"]


def test_given_api_kind_http_then_the_rest_endpoint_is_disabled_and_api_url_names_the_http_api(
    template: dict[str, Any],
) -> None:
    deployed = _deployed(template, ApiKind="Http")

    assert deployed["Resources"]["HooklineApi"]["Properties"]["DisableExecuteApiEndpoint"] is True
    assert deployed["Outputs"]["ApiUrl"]["Value"] == {"Fn::Sub": HTTP_URL}
    # The emulator deployment maps such an output to the API's $default stage.
    rendered = HTTP_URL.replace("${HooklineHttpApi}", "a1b2c3").replace("${AWS::Region}", "us-east-1")
    rendered = rendered.replace("${AWS::URLSuffix}", "amazonaws.com")
    assert (
        endpoint_api_url(rendered, "http://127.0.0.1:4566") == "http://127.0.0.1:4566/_aws/execute-api/a1b2c3"
    )


def test_given_either_api_kind_then_every_other_resource_is_the_same(template: dict[str, Any]) -> None:
    rest = _deployed(template, ApiKind="Rest")["Resources"]
    http = _deployed(template, ApiKind="Http")["Resources"]

    assert set(http) - set(rest) == set(HTTP_RESOURCES)
    changed = sorted(name for name in rest if rest[name] != http[name])
    assert changed == ["HooklineApi"]  # DisableExecuteApiEndpoint alone
    without = {
        key: value
        for key, value in rest["HooklineApi"]["Properties"].items()
        if key != "DisableExecuteApiEndpoint"
    }
    assert without == {
        key: value
        for key, value in http["HooklineApi"]["Properties"].items()
        if key != "DisableExecuteApiEndpoint"
    }
