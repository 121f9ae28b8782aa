"""Fixtures of the fault suite: a moto process for the session, a world per scenario, the summary table.

Each scenario's summary line is printed as soon as it is judged (through the terminal reporter, so it
shows without -s), again as a table at the end of the session, and merged into .chaos/summary.json.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator

import pytest

from tests.chaos.processes import MotoServer
from tests.chaos.summary import RESULTS_DIR, Summary, table, write_json
from tests.chaos.world import SCALE, Options, World
from tests.support.redis_server import free_port

_summaries: list[Summary] = []


@pytest.fixture(scope="session")
def moto_server() -> Iterator[MotoServer]:
    """Yields moto's server in a process of its own (the scenarios' DynamoDB), killed at session end."""
    if shutil.which("redis-server") is None:
        # As tests/conftest.py does for the integration tests: skip on a laptop, fail in CI.
        if os.environ.get("CI"):
            pytest.fail("the fault suite needs redis-server on PATH")
        pytest.skip("redis-server is not installed")
    server = MotoServer(free_port(), RESULTS_DIR / "logs" / "moto.log")
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def make_world(
    moto_server: MotoServer, request: pytest.FixtureRequest
) -> Iterator[Callable[[Options], World]]:
    """Yields a builder of the test's world; every world it built is closed (all processes killed)."""
    built: list[World] = []
    moto_server.reset()

    def build(options: Options) -> World:
        world = World(request.node.name.removeprefix("test_"), moto_server, options)
        built.append(world)
        return world

    try:
        yield build
    finally:
        for world in built:
            world.close()


@pytest.fixture
def record(request: pytest.FixtureRequest) -> Callable[[Summary], None]:
    """Returns the recorder of the test's summary: printed now, in the final table and in the JSON file."""

    def recorder(summary: Summary) -> None:
        _summaries.append(summary)
        write_json([summary], SCALE)
        reporter = request.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line("")
            reporter.write_line(f"chaos {summary.line()}")

    return recorder


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Prints every scenario judged in this session as one table."""
    if not _summaries:
        return
    terminalreporter.section(f"fault suite summary (HOOKLINE_CHAOS_SCALE={SCALE:g})")
    for row in table(_summaries):
        terminalreporter.write_line(row)
    terminalreporter.write_line("")
    for summary in _summaries:
        terminalreporter.write_line(summary.line())
    terminalreporter.write_line(
        f"written to {RESULTS_DIR / 'summary.json'}; process logs in {RESULTS_DIR / 'logs'}"
    )
