"""The statistics route: the caller's last hour per minute, its dead-letter count and the backlog."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import Router

from hookline.api.context import container
from hookline.api.errors import error_responses
from hookline.api.gate import principal
from hookline.api.jobs import ok_response
from hookline.api.scopes import requires
from hookline.api.stats_views import StatsView, stats_view

router = Router()


@router.get(
    "/v1/stats",
    summary="Get the caller's statistics for the last hour",
    tags=["stats"],
    operation_id="getStats",
    responses={
        **ok_response(StatsView, "Counters per minute and now"),
        **error_responses(401, 403, 422, 429, 503),
    },
)
@requires("jobs:read")
def get_stats() -> StatsView:
    """Returns the tenant's outcomes per minute, dead-letter count and the backlog, from Redis counters."""
    who = principal()
    current = container()
    now_ms = current.clock.now_ms()
    return stats_view(current.stats.read(who.tenant, now_ms, current.shards), now_ms)
