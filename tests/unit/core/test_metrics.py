"""The metrics adapter aggregates in memory and emits CloudWatch EMF through Powertools once a call."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_lambda_powertools import Metrics

from hookline.adapters.metrics import PowertoolsMetrics


def _documents(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in capsys.readouterr().out.strip().splitlines() if line.startswith("{")]


def test_given_counts_timings_and_gauges_when_published_then_one_emf_document_with_their_aggregates(
    capsys: pytest.CaptureFixture[str],
) -> None:
    metrics = Metrics(namespace="Hookline", service="hookline")
    sink = PowertoolsMetrics(metrics)

    sink.count("Succeeded")
    sink.count("Succeeded", 2)
    sink.count("Retried", 0)  # zero counts are not emitted
    sink.timing_ms("ScheduleLagMs", -3)  # clock skew can make a lag negative: clamp, never emit < 0
    sink.timing_ms("ScheduleLagMs", 12.5)
    sink.gauge("QueueDepth", 7)
    sink.gauge("QueueDepth", 4)  # a level: the last one recorded is what is published
    sink.publish()
    metrics.flush_metrics()

    [document] = _documents(capsys)
    definitions = {m["Name"]: m["Unit"] for m in document["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    assert definitions == {"Succeeded": "Count", "ScheduleLagMs": "Milliseconds", "QueueDepth": "Count"}
    assert document["Succeeded"] == [3.0]
    assert document["ScheduleLagMs"] == [0.0, 12.5]
    assert document["QueueDepth"] == [4.0]
    assert document["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["service"]]


def test_given_nothing_recorded_since_the_last_publish_when_published_then_nothing_is_added_twice(
    capsys: pytest.CaptureFixture[str],
) -> None:
    metrics = Metrics(namespace="Hookline", service="hookline")
    sink = PowertoolsMetrics(metrics)
    sink.count("Succeeded", 5)
    sink.publish()
    sink.publish()
    metrics.flush_metrics()

    [document] = _documents(capsys)
    assert document["Succeeded"] == [5.0]


def test_given_a_handler_that_raises_when_decorated_then_its_metrics_are_still_flushed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    metrics = Metrics(namespace="Hookline", service="hookline")
    sink = PowertoolsMetrics(metrics)

    @sink.log_metrics
    def handler(event: dict[str, Any], context: object) -> None:
        sink.count("ExecutorErrors")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        handler({}, None)

    [document] = _documents(capsys)
    assert document["ExecutorErrors"] == [1.0]


def test_given_many_timings_when_published_then_every_value_reaches_emf_in_documents_of_at_most_100(
    capsys: pytest.CaptureFixture[str],
) -> None:
    metrics = Metrics(namespace="Hookline", service="hookline")
    sink = PowertoolsMetrics(metrics)
    for value in range(250):
        sink.timing_ms("CallbackLatencyMs", value)
    sink.publish()
    metrics.flush_metrics()

    values: list[float] = []
    for document in _documents(capsys):
        batch = document["CallbackLatencyMs"]
        assert len(batch) <= 100
        values += batch
    assert sorted(values) == [float(v) for v in range(250)]
