"""The start of a Lambda function: what each of the four builds once per cold start, at module level.

A function module calls start_function() first, adds its own wiring (the API its router), and calls
freeze_start_up_heap() last; its handler is decorators plus one call into the container.
"""

from __future__ import annotations

from typing import NamedTuple

from aws_lambda_powertools import Logger, Metrics, Tracer

from hookline.adapters.metrics import PowertoolsMetrics
from hookline.plumbing.settings import Settings
from hookline.plumbing.tracing import TRACED_MODULES
from hookline.plumbing.wiring import Container


class Started(NamedTuple):
    """A function's process-wide parts: its Powertools logger and tracer, its metrics sink, its container."""

    logger: Logger
    tracer: Tracer
    sink: PowertoolsMetrics
    container: Container


def start_function() -> Started:
    """Builds the logger, the tracer (patching TRACED_MODULES), the metrics and the container (its settings
    read from the environment, its metrics published through Powertools)."""
    sink = PowertoolsMetrics(Metrics())
    return Started(
        Logger(), Tracer(patch_modules=TRACED_MODULES), sink, Container(Settings.from_env(), metrics=sink)
    )
