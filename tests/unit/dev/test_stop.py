"""stop_within: `hookline dev` ends within its stop budget, whatever the orderly stop does meanwhile."""

from __future__ import annotations

import threading

from hookline_local.cli import stop_within

BUDGET_S = 0.2
WAIT_S = 10.0  # only bounds a broken test; a passing one never waits this long


class HangingStack:
    """A stack whose orderly stop waits until it is killed, as one stuck on a process that does not exit."""

    def __init__(self, hangs: bool) -> None:
        self.hangs = hangs
        self.killed = threading.Event()
        self.stopped = False

    def stop(self) -> None:
        if self.hangs:
            self.killed.wait(WAIT_S)
        self.stopped = True

    def kill(self) -> None:
        self.killed.set()


def test_given_a_stop_that_hangs_when_stopped_within_the_budget_then_everything_is_killed_and_it_exits() -> (
    None
):
    stack, lines, exits = HangingStack(hangs=True), [], []
    exited = threading.Event()

    def exit_process(code: int) -> None:
        exits.append(code)
        exited.set()

    stop_within(stack, BUDGET_S, lines.append, exit_process)

    assert exited.wait(WAIT_S)
    assert stack.killed.is_set()
    assert exits[0] == 0
    assert lines[0] == f"stopped (the orderly stop overran {BUDGET_S:g} s: killed what was left)"


def test_given_a_prompt_stop_when_stopped_within_the_budget_then_nothing_is_killed() -> None:
    stack, lines, exits = HangingStack(hangs=False), [], []

    stop_within(stack, BUDGET_S, lines.append, exits.append)

    assert (stack.stopped, stack.killed.is_set(), lines, exits) == (True, False, ["stopped"], [0])
