"""Runs one executor as its own process (as an execute invocation would), configured by HOOKLINE_* variables.

Tests start it with subprocess and kill it with SIGKILL to leave its attempts in flight.
`python -m tests.support.executor_process <seconds>` runs it for that long at most.
"""

from __future__ import annotations

import sys

from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container


def main(run_s: float) -> None:
    """Delivers until run_s has passed (and its callbacks end)."""
    container = Container(Settings.from_env(), consumer="doomed-executor")
    try:
        container.executor.run(container.clock.now_ms() + int(run_s * 1000), block_ms=100)
    finally:
        container.close()


if __name__ == "__main__":
    main(float(sys.argv[1]))
