"""`hookline keys`: create, list, revoke, rotate-signing-secret against moto's server."""

from __future__ import annotations

import json

import pytest

from hookline.domain.clock import SystemClock
from hookline.domain.errors import Unauthorized
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container
from hookline.usecases.auth import Authenticator
from hookline_client.cli import main

pytestmark = pytest.mark.integration


@pytest.fixture
def cli_env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Points the CLI's environment at the test's tables."""
    monkeypatch.setenv("HOOKLINE_AWS_ENDPOINT", str(settings.aws_endpoint_url))
    monkeypatch.setenv("HOOKLINE_API_KEYS_TABLE", settings.api_keys_table)
    return settings


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_given_new_tenant_when_key_created_then_key_authenticates_and_secret_printed_once(
    cli_env: Settings, container: Container, capsys: pytest.CaptureFixture[str]
) -> None:
    first = run_json(capsys, "keys", "create", "--tenant", "acme", "--rate-limit-per-s", "7")
    second = run_json(capsys, "keys", "create", "--tenant", "acme", "--scopes", "jobs:read")

    assert isinstance(first, dict) and isinstance(second, dict)
    principal = container.authenticator.authenticate(first["api_key"])
    assert (principal.tenant, principal.key_id, principal.rate_limit_per_s) == ("acme", first["key_id"], 7)
    assert container.authenticator.authenticate(second["api_key"]).scopes == ("jobs:read",)
    secrets = container.keys.get_signing_secrets("acme")
    assert secrets is not None and first["signing_secret"] == secrets.current
    assert second["signing_secret"] is None  # the tenant's secret is shown with its first key only


def test_given_keys_when_listed_then_no_secret_and_revocation_shows(
    cli_env: Settings, container: Container, capsys: pytest.CaptureFixture[str]
) -> None:
    created = run_json(capsys, "keys", "create", "--tenant", "acme")
    assert isinstance(created, dict)
    assert main(["keys", "revoke", created["key_id"]]) == 0
    assert "30 s" in capsys.readouterr().out

    listed = run_json(capsys, "keys", "list")
    assert main(["keys", "list"]) == 0
    header, line = capsys.readouterr().out.splitlines()[:2]

    assert isinstance(listed, list) and len(listed) == 1
    row = listed[0]
    assert (row["key_id"], row["tenant"], row["revoked_ms"] is not None) == (created["key_id"], "acme", True)
    assert created["api_key"].split("_")[2] not in json.dumps(listed)
    assert header.split() == ["KEY", "ID", "TENANT", "STATE", "SCOPES", "RATE/S", "CREATED"]
    assert line.split()[:3] == [created["key_id"], "acme", "revoked"]
    with pytest.raises(Unauthorized):
        Authenticator(container.keys, SystemClock()).authenticate(created["api_key"])


def test_given_unknown_key_when_revoked_then_exit_1_with_message(
    cli_env: Settings, container: Container, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["keys", "revoke", "0123456789abcdef"]) == 1
    assert "no key 0123456789abcdef" in capsys.readouterr().err


def test_given_tenant_when_signing_secret_rotated_then_both_sign_during_the_overlap(
    cli_env: Settings, container: Container, capsys: pytest.CaptureFixture[str]
) -> None:
    created = run_json(capsys, "keys", "create", "--tenant", "acme")
    assert isinstance(created, dict)

    assert main(["keys", "rotate-signing-secret", "--tenant", "acme", "--overlap-s", "60"]) == 0

    secrets = container.keys.get_signing_secrets("acme")
    assert secrets is not None
    assert secrets.previous == created["signing_secret"]
    now_ms = SystemClock().now_ms()
    assert secrets.active(now_ms) == [secrets.current, created["signing_secret"]]
    assert secrets.active(now_ms + 61_000) == [secrets.current]
    assert secrets.current in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        ["keys", "create", "--tenant", "has space"],
        ["keys", "create", "--tenant", "acme", "--scopes", "jobs:admin"],
        ["keys", "create", "--tenant", "acme", "--rate-limit-per-s", "0"],
    ],
)
def test_given_bad_arguments_when_creating_then_exit_without_storing(
    cli_env: Settings, container: Container, argv: list[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)

    assert exited.value.code not in (0, None)
    assert container.keys.list_keys() == []
