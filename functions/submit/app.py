"""The API function: every /v1 route, health and OpenAPI, behind API Gateway (REST, proxy events v1)."""

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from hookline.api import context, errors, jobs, schedules
from hookline.metrics import PowertoolsMetrics
from hookline.settings import Settings
from hookline.wiring import Container

logger = Logger()
tracer = Tracer()
metrics = Metrics()
context.use(Container(Settings.from_env(), metrics=PowertoolsMetrics(metrics)))
app = APIGatewayRestResolver(enable_validation=True)
app.include_router(jobs.router)
app.include_router(schedules.router)
errors.register(app)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], lambda_context: LambdaContext) -> dict[str, Any]:
    """Routes one API Gateway proxy event."""
    return app.resolve(event, lambda_context)
