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


def test_given_many_timings_when_published_then_powertools_adds_only_one_document_of_them_one_by_one(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    metrics = Metrics(namespace="Hookline", service="hookline")
    metrics.set_default_dimensions(environment="test")
    sink = PowertoolsMetrics(metrics)
    added: list[str] = []
    add_metric = metrics.add_metric

    def counting_add_metric(name: str, unit: Any, value: float, resolution: Any = 60) -> None:
        added.append(name)
        add_metric(name=name, unit=unit, value=value, resolution=resolution)

    monkeypatch.setattr(metrics, "add_metric", counting_add_metric)
    for value in range(1_000):
        sink.timing_ms("CallbackLatencyMs", value)
    sink.count("Succeeded", 1_000)
    sink.publish()
    metrics.flush_metrics()

    # Powertools' add_metric costs O(values already added) a call: 1,000 calls of it were ~20 µs per job.
    assert added.count("CallbackLatencyMs") < 100
    documents = _documents(capsys)
    values = [value for document in documents for value in document.get("CallbackLatencyMs", [])]
    assert sorted(values) == [float(v) for v in range(1_000)]
    assert [document.get("Succeeded") for document in documents if "Succeeded" in document] == [[1_000.0]]
    for document in documents:
        [directive] = document["_aws"]["CloudWatchMetrics"]
        assert directive["Namespace"] == "Hookline"
        assert directive["Dimensions"] == [["environment", "service"]]
        assert (document["service"], document["environment"]) == ("hookline", "test")
        assert all(len(document[m["Name"]]) <= 100 for m in directive["Metrics"])


def test_given_metrics_disabled_when_many_timings_published_then_no_document_is_printed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    metrics = Metrics(namespace="Hookline", service="hookline")
    sink = PowertoolsMetrics(metrics)
    sink.count("Succeeded")
    for value in range(300):
        sink.timing_ms("ScheduleLagMs", value)
    sink.publish()
    metrics.flush_metrics()

    assert capsys.readouterr().out == ""
