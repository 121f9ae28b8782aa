"""The metrics adapter emits CloudWatch EMF through Powertools, with no tenant in any dimension."""

from __future__ import annotations

import json

import pytest
from aws_lambda_powertools import Metrics

from hookline.adapters.metrics import PowertoolsMetrics


def test_given_counts_timings_and_gauges_when_flushed_then_one_emf_document_with_each(
    capsys: pytest.CaptureFixture[str],
) -> None:
    metrics = Metrics(namespace="Hookline", service="hookline")
    sink = PowertoolsMetrics(metrics)

    sink.count("Succeeded")
    sink.count("Succeeded", 2)
    sink.count("Retried", 0)  # zero counts are not emitted
    sink.timing_ms("ScheduleLagMs", -3)  # clock skew can make a lag negative: clamp, never emit < 0
    sink.gauge("QueueDepth", 7)
    metrics.flush_metrics()

    document = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    definitions = {m["Name"]: m["Unit"] for m in document["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    assert definitions == {"Succeeded": "Count", "ScheduleLagMs": "Milliseconds", "QueueDepth": "Count"}
    assert (document["Succeeded"], document["ScheduleLagMs"], document["QueueDepth"]) == (
        [1.0, 2.0],
        [0.0],
        [7.0],
    )
    assert document["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["service"]]
