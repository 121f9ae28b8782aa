"""moto as the AWS endpoint: its HTTP server for integration tests, tables made from template.yaml."""

from __future__ import annotations

import os
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest
from moto.server import ThreadedMotoServer

from hookline.adapters.dynamo.json_client import JSON_OPERATIONS
from hookline.plumbing.settings import Settings
from hookline_local.template import create_tables, load_template, table_names
from tests.support.redis_server import free_port

FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
}


def use_fake_credentials() -> None:
    """Points boto3 at fake credentials so no test can reach a real account."""
    os.environ.update(FAKE_CREDENTIALS)


def patch_fake_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Points boto3 at fake credentials for one test (undone after it), for in-process moto."""
    for name, value in FAKE_CREDENTIALS.items():
        monkeypatch.setenv(name, value)


@contextmanager
def running_moto() -> Iterator[str]:
    """Yields the endpoint URL of a moto server on a free loopback port (or HOOKLINE_AWS_ENDPOINT)."""
    if os.environ.get("HOOKLINE_AWS_ENDPOINT"):
        yield os.environ["HOOKLINE_AWS_ENDPOINT"]
        return
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def reset_moto(endpoint_url: str) -> None:
    """Drops every resource moto holds (a no-op against LocalStack, whose tables are named per test)."""
    if os.environ.get("HOOKLINE_AWS_ENDPOINT"):
        return
    request = urllib.request.Request(f"{endpoint_url}/moto-api/reset", method="POST")
    with urllib.request.urlopen(request, timeout=10):
        pass


def make_tables(settings: Settings) -> None:
    """Creates the template's tables under the settings' names."""
    client = boto3.client("dynamodb", endpoint_url=settings.aws_endpoint_url, region_name=settings.aws_region)
    try:
        create_tables(client, load_template(), table_names(settings))
    finally:
        client.close()


class Boto3WithBudget:
    """A boto3 DynamoDB client that takes the JSON client's calls: a call's budget (timeout_s) is dropped.

    The job store gives a lease renewal its budget as timeout_s, as the JSON client takes it; a boto3 client
    has no such argument, and its own connect and read timeouts and attempts bound its calls instead. Tests
    that run the DynamoDB adapters on boto3 itself (beside the JSON client) wrap it in this.
    """

    def __init__(self, client: Any) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._client, name)
        if name not in JSON_OPERATIONS:
            return method

        def call(*, timeout_s: float | None = None, **params: Any) -> Any:
            return method(**params)

        return call
