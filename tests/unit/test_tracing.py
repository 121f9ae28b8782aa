"""The functions' X-Ray tracing patches only TRACED_MODULES, not every module the SDK knows."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

FUNCTIONS = sorted(Path(__file__).parents[2].glob("functions/*/app.py"))


def tracer_calls(source: Path) -> list[ast.Call]:
    """Returns every `Tracer(...)` call in source."""
    tree = ast.parse(source.read_text())
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Tracer"
    ]


@pytest.mark.parametrize("app", FUNCTIONS, ids=lambda path: path.parent.name)
def test_given_a_function_then_its_tracer_patches_only_the_traced_modules(app: Path) -> None:
    (call,) = tracer_calls(app)

    # Tracer() alone patches everything the X-Ray SDK supports (patch_all), http.client included.
    patched = {keyword.arg: keyword.value for keyword in call.keywords}
    assert isinstance(patched.get("patch_modules"), ast.Name)
    assert patched["patch_modules"].id == "TRACED_MODULES"  # type: ignore[union-attr]
