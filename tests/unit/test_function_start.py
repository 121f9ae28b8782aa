"""The four Lambda functions start the same way: start_function() (plumbing/bootstrap.py), then their own
wiring, then the heap frozen; each handler is decorators plus one call."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from hookline.plumbing.bootstrap import start_function

FUNCTIONS = sorted((Path(__file__).resolve().parents[2] / "functions").glob("*/app.py"))
# What start_function() builds: a function module that builds one itself has drifted from the others.
STARTED_PARTS = {"Logger", "Tracer", "Metrics", "PowertoolsMetrics", "Container", "Settings"}


def calls_at_module_level(module: ast.Module) -> list[str]:
    """Returns the names called by the module's own statements, in order (not inside functions)."""
    called = []
    for statement in module.body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for node in ast.walk(statement):
            if isinstance(node, ast.Call):
                func = node.func
                called.append(func.id if isinstance(func, ast.Name) else getattr(func, "attr", ""))
    return called


def test_given_the_environment_when_a_function_starts_then_its_container_publishes_through_its_sink(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HOOKLINE_JOBS_TABLE", "jobs-from-env")
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")

    started = start_function()

    assert started.container.settings.jobs_table == "jobs-from-env"
    assert started.container.metrics is started.sink


@pytest.mark.parametrize("path", FUNCTIONS, ids=lambda path: path.parent.name)
def test_given_a_function_module_then_it_starts_with_start_function_and_ends_with_the_heap_frozen(
    path: Path,
) -> None:
    called = calls_at_module_level(ast.parse(path.read_text(), str(path)))

    assert "start_function" in called
    assert called[-1] == "freeze_start_up_heap"
    assert STARTED_PARTS.isdisjoint(called), "built by start_function()"


def test_given_the_functions_then_there_are_four() -> None:
    assert [path.parent.name for path in FUNCTIONS] == ["execute", "promote", "reap", "submit"]
