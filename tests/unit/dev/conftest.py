"""Fixtures for the dev-stack unit tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def fake_aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Points boto3 at fixed fake credentials and a region, for in-process moto (mock_aws)."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
