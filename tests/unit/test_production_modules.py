"""Production modules hold no test-only code.

Production here is what a deployment ships: the Lambda layer (layers/core/hookline) and the functions. Two
rules, read from the source with ast:

1. No class or function there is named as a test double (Fake, Frozen, Stub, Mock, Spy, Dummy): doubles
   live in tests/fakes.
2. Every class, function and method defined there is named somewhere that ships or runs Hookline (the
   layer, the functions, the local stack, the client, bench, template.yaml, pyproject.toml) other than at its
   own definition. A name only tests mention is a test-only helper: the test should build what it needs from
   the production API instead. Exempt: dunder methods, definitions registered by a decorator (routes,
   validators: the decorator is their use), and LIBRARY_HOOKS.

Rule 2 goes by name: a method whose name another production module also uses passes, so it catches what
no production code names at all, not every unused method.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = [ROOT / "layers" / "core" / "hookline", ROOT / "functions"]
USERS = [*PRODUCTION, ROOT / "localstack" / "hookline_local", ROOT / "client", ROOT / "bench"]
USER_TEXTS = [ROOT / "template.yaml", ROOT / "pyproject.toml"]
DOUBLE_NAME = re.compile(r"^_?(Fake|Frozen|Stub|Mock|Spy|Dummy)[A-Z_]")
# Decorators that do not register what they decorate: the definition still needs a caller.
PLAIN_DECORATORS = {"property", "cached_property", "staticmethod", "classmethod", "override"}
# Methods a library calls by name on a subclass.
LIBRARY_HOOKS = {
    "get_encoder",  # redis-py's RedisCluster asks its client for the encoder (adapters/redis/cluster.py)
}

Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def python_files(roots: list[Path]) -> Iterator[Path]:
    for root in roots:
        yield from (path for path in root.rglob("*.py") if "egg-info" not in str(path))


def definitions(path: Path) -> Iterator[Definition]:
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node


def decorator_name(decorator: ast.expr) -> str:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(target, ast.Attribute):
        return target.attr
    return target.id if isinstance(target, ast.Name) else ""


def registered(node: Definition) -> bool:
    return any(decorator_name(decorator) not in PLAIN_DECORATORS for decorator in node.decorator_list)


def names_used(users: list[Path], texts: list[Path]) -> set[str]:
    """Returns every identifier the users' code reads, imports or calls, and every word of the texts."""
    used: set[str] = set()
    for path in python_files(users):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Name):
                used.add(node.id)
            elif isinstance(node, ast.Attribute):
                used.add(node.attr)
            elif isinstance(node, ast.alias):
                used.add(node.name.rpartition(".")[2])
    for path in texts:
        used.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", path.read_text()))
    return used


def unnamed_definitions(production: list[Path], users: list[Path], texts: list[Path]) -> list[str]:
    """Returns the production definitions (rule 2) that no user names, as "path: name"."""
    used = names_used(users, texts)
    return [
        f"{path.name}: {node.name}"
        for path in python_files(production)
        for node in definitions(path)
        if not (node.name.startswith("__") and node.name.endswith("__"))
        and node.name not in LIBRARY_HOOKS
        and not registered(node)
        and node.name not in used
    ]


def test_given_the_production_modules_then_no_definition_is_named_as_a_test_double() -> None:
    doubles = [
        f"{path.relative_to(ROOT)}: {node.name}"
        for path in python_files(PRODUCTION)
        for node in definitions(path)
        if DOUBLE_NAME.match(node.name)
    ]

    assert doubles == [], "test doubles belong in tests/fakes"


def test_given_the_production_modules_then_every_definition_is_named_by_production_code() -> None:
    test_only = unnamed_definitions(PRODUCTION, USERS, USER_TEXTS)

    assert test_only == [], "only tests name these: build what the test needs from the production API"


def test_given_a_method_only_a_test_calls_then_the_rule_finds_it(tmp_path: Path) -> None:
    production, tests = tmp_path / "layer", tmp_path / "tests"
    production.mkdir()
    tests.mkdir()
    (production / "reap.py").write_text(
        "class Reaper:\n    def watch(self): ...\n    def redeliver(self): ...\n\n"
        "def handler():\n    Reaper().watch()\n"
    )
    (tests / "test_reap.py").write_text("from layer.reap import Reaper\n\nReaper().redeliver()\n")

    test_only = unnamed_definitions([production], [production], [])

    assert sorted(test_only) == ["reap.py: handler", "reap.py: redeliver"]
