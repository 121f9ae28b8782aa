"""Schedule (cron) routes; filled in by the cron work, included by the API function already."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import Router

router = Router()
