"""Starts extra executors (hookline.ports.ExecutorLauncher) and woken promoters (hookline.ports.PromoterWaker)
as asynchronous Lambda invocations."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

logger = logging.getLogger(__name__)

# What a fan-out invocation of the execute function receives (it ignores its event, as with EventBridge).
FAN_OUT_EVENT = {"source": "hookline.fan-out"}
# What a woken promote invocation receives (it ignores its event too).
WAKE_EVENT = {"source": "hookline.wake"}
# Invokes sent at once: the promoter waits for a launch, so ten invokes cost about one round trip, not ten.
MAX_PARALLEL_INVOKES = 10


class LambdaLauncher:
    """Starts executors as asynchronous invocations (InvocationType=Event) of the execute function."""

    def __init__(
        self, client_factory: Callable[[], Any], function_name: str, event: dict[str, str] | None = None
    ) -> None:
        self._client_factory = client_factory
        self._client: Any = None
        self._function_name = function_name
        self._payload = json.dumps(FAN_OUT_EVENT if event is None else event).encode()

    def launch(self, count: int) -> int:
        """Queues count asynchronous invocations, up to MAX_PARALLEL_INVOKES at a time; returns how many
        Lambda accepted (a refusal, such as throttling, is logged and not counted)."""
        if count <= 0:
            return 0
        if self._client is None:
            # Built on first use: most promoter invocations never fan out, so a cold start skips it. boto3
            # clients are thread-safe.
            self._client = self._client_factory()
        if count == 1:
            return int(self._invoke())
        with ThreadPoolExecutor(
            max_workers=min(count, MAX_PARALLEL_INVOKES), thread_name_prefix="fan-out"
        ) as pool:
            return sum(pool.map(lambda _: self._invoke(), range(count)))

    def _invoke(self) -> bool:
        try:
            self._client.invoke(
                FunctionName=self._function_name, InvocationType="Event", Payload=self._payload
            )
        except Exception:
            # The caller counts the refusal; the next check (fan-out) or the schedule's tick (wake) retries.
            logger.exception("async invoke failed", extra={"function": self._function_name})
            return False
        return True


class LambdaWaker:
    """Starts one promoter as an asynchronous invocation (InvocationType=Event) of the promote function."""

    def __init__(self, client_factory: Callable[[], Any], function_name: str) -> None:
        self._launcher = LambdaLauncher(client_factory, function_name, WAKE_EVENT)

    def wake(self) -> bool:
        """Queues one invocation; False when Lambda refused it (logged, never raised)."""
        return self._launcher.launch(1) == 1
