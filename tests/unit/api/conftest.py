"""The payload_format fixture: a module marked with it sends its requests as REST and HTTP API events."""

from tests.support.apigw import payload_format  # noqa: F401 - a fixture for the modules
