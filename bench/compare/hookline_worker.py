"""One Hookline engine process for the comparison: the promoter or an executor, looping until killed.

Runs the same use cases the Lambda handlers run (Container from the environment, as template.yaml sets it),
invocation after invocation without a gap, as EventBridge plus fan-out keep them running in AWS.

    python -m bench.compare.hookline_worker promote|execute
"""

from __future__ import annotations

import signal
import sys

from hookline.plumbing.heap import freeze_start_up_heap
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container

INVOCATION_MS = 10_000


def main(role: str) -> None:
    """Loops the role's use case in 10 s invocations until SIGTERM."""
    container = Container(Settings.from_env())
    freeze_start_up_heap()  # as the function modules do once wired
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        deadline = container.clock.now_ms() + INVOCATION_MS
        if role == "promote":
            container.promoter.run(deadline)
        else:
            container.executor.run(deadline)


if __name__ == "__main__":
    main(sys.argv[1])
