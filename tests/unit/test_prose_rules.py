"""Docstrings and comments in the shipped code state rules and invariants, not measurements.

A figure someone measured (a benchmark's CPU per call, jobs/s on some machine) goes stale as the code and
the machines change; it belongs on docs/performance.md, with the command that measures it again. The code
keeps the rule the figure led to. A prose line is taken for a measurement when it cites a benchmark script
(bench/...), says "measured with/at/on/by" or "on this machine", or gives a time in microseconds or a CPU
cost per call, job or request. Constants, the limits they set and figures derived from a documented limit
(DynamoDB's write units per partition) are rules, not measurements: "at most 500 ms" passes.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = [ROOT / "layers" / "core" / "hookline", ROOT / "functions"]
MEASUREMENT = re.compile(
    r"bench/|\bmeasured (?:with|at|on|by)\b|\bthis machine\b|\d ?µs\b|\d ?us\b"
    r"|\bCPU (?:per|on each) (?:call|job|request|delivery)",
    re.IGNORECASE,
)


def prose(path: Path) -> Iterator[tuple[int, str]]:
    """Yields (line, text) of every docstring and comment in a Python file."""
    source = path.read_text()
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            docstring = ast.get_docstring(node, clean=False)
            if docstring is not None:
                first = node.body[0].lineno
                for offset, line in enumerate(docstring.splitlines()):
                    yield first + offset, line
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def measurements(roots: list[Path]) -> list[str]:
    """Returns "path:line: text" for every prose line under roots that reads as a measurement."""
    return [
        f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name}:{line}: {text.strip()}"
        for root in roots
        for path in sorted(root.rglob("*.py"))
        for line, text in prose(path)
        if MEASUREMENT.search(text)
    ]


def test_given_the_shipped_code_then_no_docstring_or_comment_carries_a_measurement() -> None:
    found = measurements(SHIPPED)

    assert found == [], "move the figure to docs/performance.md; keep the rule it led to"


def test_given_a_measurement_in_prose_then_it_is_found_and_a_limit_is_not(tmp_path: Path) -> None:
    (tmp_path / "module.py").write_text(
        '"""Sends in batches: about 5 ms a cycle, 1,470 jobs/s (bench/hotpath.py)."""\n\n'
        "LIMIT_MS = 500  # at most 500 ms: the attempt's deadline\n"
        "CPU = 1  # boto3 spends 1.5 ms of CPU per call\n"
    )

    found = measurements([tmp_path])

    assert [entry.split(": ", 1)[0] for entry in found] == ["module.py:1", "module.py:4"]
