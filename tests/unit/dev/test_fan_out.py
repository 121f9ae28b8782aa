"""The Lambda launcher the fan-out starts executors with: asynchronous invokes by name, stopping at a refusal.

The scaler itself (when and how many) is tested on the engine's fakes in tests/unit/usecases/test_fan_out.py.
"""

from __future__ import annotations

import threading
from typing import Any

from hookline.adapters.lambda_launcher import FAN_OUT_EVENT, MAX_PARALLEL_INVOKES, LambdaLauncher


class FakeLambda:
    """Lambda's Invoke: accepts the first accept calls, then refuses (throttling); thread-safe.

    With parties, each accepted call also waits at a barrier for that many calls in flight at once.
    """

    def __init__(self, accept: int | None = None, parties: int | None = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self._accept = accept
        self._lock = threading.Lock()
        self._barrier = None if parties is None else threading.Barrier(parties, timeout=10)

    def invoke(self, **kwargs: Any) -> dict[str, Any]:
        with self._lock:
            if self._accept is not None and len(self.calls) >= self._accept:
                raise RuntimeError("TooManyRequestsException")
            self.calls.append(kwargs)
        if self._barrier is not None:
            self._barrier.wait()  # BrokenBarrierError (a failed invoke) unless the calls run at once
        return {"StatusCode": 202}


def test_given_lambda_launcher_when_launching_then_it_invokes_asynchronously_by_name() -> None:
    client = FakeLambda()
    launcher = LambdaLauncher(lambda: client, "hookline-execute")

    started = launcher.launch(2)

    assert started == 2
    assert [call["FunctionName"] for call in client.calls] == ["hookline-execute"] * 2
    assert {call["InvocationType"] for call in client.calls} == {"Event"}
    assert client.calls[0]["Payload"] == b'{"source": "hookline.fan-out"}'
    assert FAN_OUT_EVENT == {"source": "hookline.fan-out"}


def test_given_many_launches_when_launching_then_invokes_are_sent_side_by_side() -> None:
    client = FakeLambda(parties=MAX_PARALLEL_INVOKES)
    launcher = LambdaLauncher(lambda: client, "hookline-execute")

    # Each invoke waits until MAX_PARALLEL_INVOKES are in flight: one after the other, none would return.
    assert launcher.launch(2 * MAX_PARALLEL_INVOKES) == 2 * MAX_PARALLEL_INVOKES


def test_given_throttled_lambda_when_launching_then_only_accepted_invokes_count(caplog: Any) -> None:
    launcher = LambdaLauncher(lambda: FakeLambda(accept=1), "hookline-execute")

    assert launcher.launch(3) == 1
    assert "fan-out invoke failed" in caplog.text
