"""The stacks `hookline dev` starts, one of each kind per test session (a deployment takes ~10 s)."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Iterator

import pytest

from tests.e2e.dev_stack import DEPLOYED, HAND_WIRED, DevStack, assert_stops_cleanly


@pytest.fixture(scope="session", autouse=True)
def _needs_redis_server() -> None:
    if shutil.which("redis-server") is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is required in CI")
        pytest.skip("redis-server is not installed")


@pytest.fixture(scope="session")
def deployed_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    """`hookline dev`: template.yaml deployed on the embedded emulator."""
    with DevStack(tmp_path_factory.mktemp("deployed-stack"), DEPLOYED) as running:
        yield running
        # As a terminal's Ctrl-C: the whole process group; the emulator's Lambda workers must go too.
        assert_stops_cleanly(running, signal.SIGINT, group=True)


@pytest.fixture(scope="session")
def hand_wired_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    """`hookline dev --hand-wired`: the previous stack (gateway, timers and sandboxes on moto)."""
    with DevStack(tmp_path_factory.mktemp("hand-wired-stack"), HAND_WIRED) as running:
        yield running
        assert running.stop() == 0, running.output
