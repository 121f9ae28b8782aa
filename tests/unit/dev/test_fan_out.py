"""The Lambda launcher the fan-out starts executors with: asynchronous invokes by name, stopping at a refusal.

The scaler itself (when and how many) is tested on the engine's fakes in tests/unit/usecases/test_fan_out.py.
"""

from __future__ import annotations

import threading
from typing import Any

from hookline.adapters.lambda_launcher import (
    FAN_OUT_EVENT,
    MAX_PARALLEL_INVOKES,
    WAKE_EVENT,
    LambdaLauncher,
    LambdaWaker,
)
from hookline.ports import NullMetrics
from hookline.usecases.idle import Wake


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
    assert "async invoke failed" in caplog.text


def test_given_lambda_waker_when_waking_then_one_async_invoke_of_the_promote_function() -> None:
    client = FakeLambda()

    assert LambdaWaker(lambda: client, "hookline-promote").wake() is True
    assert [(call["FunctionName"], call["InvocationType"]) for call in client.calls] == [
        ("hookline-promote", "Event")
    ]
    assert client.calls[0]["Payload"] == b'{"source": "hookline.wake"}'
    assert WAKE_EVENT == {"source": "hookline.wake"}


def test_given_throttled_lambda_when_waking_then_false_and_counted_never_raised() -> None:
    class Metrics(NullMetrics):
        def __init__(self) -> None:
            self.counted: list[str] = []

        def count(self, name: str, value: int = 1) -> None:
            self.counted.append(name)

    metrics = Metrics()
    waker = LambdaWaker(lambda: FakeLambda(accept=0), "hookline-promote")

    assert waker.wake() is False
    Wake(waker, metrics)(0)  # what index.lua's claim calls: a failed wake fails nothing

    assert metrics.counted == ["PromoterWakeFailures"]
