"""Fixtures for the dev-stack unit tests."""

from __future__ import annotations

import pytest

from tests.support.aws import patch_fake_credentials


@pytest.fixture
def fake_aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Points boto3 at fixed fake credentials and a region, for in-process moto (mock_aws)."""
    patch_fake_credentials(monkeypatch)
