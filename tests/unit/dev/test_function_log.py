"""The hand-wired stack's function log keeps every line that the stack and its sandboxes write."""

from __future__ import annotations

from pathlib import Path

from hookline_local.stack import open_function_log


def test_given_sandbox_appending_when_the_stack_writes_too_then_no_line_is_lost(tmp_path: Path) -> None:
    path = tmp_path / "functions.log"
    path.write_text("left from the previous run\n", encoding="utf-8")
    stack_log = open_function_log(path)
    # A sandbox process opens the same file for appending, as runtime._start_sandbox does.
    with path.open("a", encoding="utf-8", buffering=1) as sandbox_log:
        for n in range(3):
            sandbox_log.write(f"sandbox {n}\n")
            stack_log.write(f"stack {n}\n")
    stack_log.close()

    lines = path.read_text(encoding="utf-8").splitlines()
    assert sorted(lines) == sorted([*(f"sandbox {n}" for n in range(3)), *(f"stack {n}" for n in range(3))])
