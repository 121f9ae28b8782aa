"""Starts extra executors as asynchronous Lambda invocations (hookline.ports.ExecutorLauncher)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

# What a fan-out invocation of the execute function receives (it ignores its event, as with EventBridge).
FAN_OUT_EVENT = {"source": "hookline.fan-out"}


class LambdaLauncher:
    """Starts executors as asynchronous invocations (InvocationType=Event) of the execute function."""

    def __init__(self, client_factory: Callable[[], Any], function_name: str) -> None:
        self._client_factory = client_factory
        self._client: Any = None
        self._function_name = function_name

    def launch(self, count: int) -> int:
        """Queues count asynchronous invocations; stops at the first refusal (throttling, permissions)."""
        if self._client is None:
            # Built on first use: most promoter invocations never fan out, so a cold start skips it.
            self._client = self._client_factory()
        payload = json.dumps(FAN_OUT_EVENT).encode()
        for started in range(count):
            try:
                self._client.invoke(FunctionName=self._function_name, InvocationType="Event", Payload=payload)
            except Exception:
                # Fan-out is an optimisation: the scheduled executors still drain the stream.
                logger.exception("fan-out invoke failed", extra={"function": self._function_name})
                return started
        return count
