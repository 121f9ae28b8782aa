"""The API function: every /v1 route, health and OpenAPI, behind API Gateway: a REST API (proxy events
v1) or, with ApiKind=Http, an HTTP API (payload format 2.0, answered in its own shape)."""

import warnings
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from hookline.api import (
    context,
    dashboard,
    dead_letters,
    errors,
    gate,
    health,
    jobs,
    payload,
    queues,
    schedules,
    signing_secret,
    stats,
)
from hookline.plumbing.bootstrap import start_function
from hookline.plumbing.heap import freeze_start_up_heap

# A read request publishes no metric; Powertools would warn about that on every such invocation.
NO_METRICS_WARNING = "No application metrics to publish"
warnings.filterwarnings("ignore", message=NO_METRICS_WARNING)

logger, tracer, sink, container = start_function()
context.use(container)
app = APIGatewayRestResolver(enable_validation=True)
app.include_router(jobs.router)
app.include_router(dead_letters.router)
app.include_router(schedules.router)
app.include_router(queues.router)
app.include_router(stats.router)
app.include_router(dashboard.router)
app.include_router(health.router)
app.include_router(signing_secret.router)
health.enable_docs(app)
errors.register(app)
# The imports and the wiring live as long as the process: no collection rescans them (plumbing/heap.py).
freeze_start_up_heap()


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
@sink.log_metrics
def handler(event: dict[str, Any], lambda_context: LambdaContext) -> dict[str, Any]:
    """Routes one API Gateway proxy event (authenticated, rate-limited and size-checked first); an HTTP API
    event goes through the same gate in its REST shape (hookline/api/payload.py)."""
    if payload.is_http_api_event(event):
        return payload.http_api_response(gate.handle(app, payload.rest_event(event), lambda_context))
    return gate.handle(app, event, lambda_context)
