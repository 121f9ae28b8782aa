"""The Lambda launcher the fan-out starts executors with: asynchronous invokes by name, stopping at a refusal.

The scaler itself (when and how many) is tested on the engine's fakes in tests/unit/usecases/test_fan_out.py.
"""

from __future__ import annotations

from typing import Any

from hookline.adapters.lambda_launcher import FAN_OUT_EVENT, LambdaLauncher


class FakeLambda:
    def __init__(self, fail_after: int | None = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self._fail_after = fail_after

    def invoke(self, **kwargs: Any) -> dict[str, Any]:
        if self._fail_after is not None and len(self.calls) >= self._fail_after:
            raise RuntimeError("TooManyRequestsException")
        self.calls.append(kwargs)
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


def test_given_throttled_lambda_when_launching_then_it_stops_and_reports_what_started(
    caplog: Any,
) -> None:
    launcher = LambdaLauncher(lambda: FakeLambda(fail_after=1), "hookline-execute")

    assert launcher.launch(3) == 1
    assert "fan-out invoke failed" in caplog.text
