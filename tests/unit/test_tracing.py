"""The functions' X-Ray tracing patches only TRACED_MODULES, not every module the SDK knows.

Every function's tracer is built by start_function() (tests/unit/test_function_start.py checks that no
function module builds its own)."""

from __future__ import annotations

import ast
from pathlib import Path

BOOTSTRAP = Path(__file__).parents[2] / "layers" / "core" / "hookline" / "plumbing" / "bootstrap.py"


def tracer_calls(source: Path) -> list[ast.Call]:
    """Returns every `Tracer(...)` call in source."""
    tree = ast.parse(source.read_text())
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Tracer"
    ]


def test_given_a_function_then_its_tracer_patches_only_the_traced_modules() -> None:
    (call,) = tracer_calls(BOOTSTRAP)

    # Tracer() alone patches everything the X-Ray SDK supports (patch_all), http.client included.
    patched = {keyword.arg: keyword.value for keyword in call.keywords}
    assert isinstance(patched.get("patch_modules"), ast.Name)
    assert patched["patch_modules"].id == "TRACED_MODULES"  # type: ignore[union-attr]
