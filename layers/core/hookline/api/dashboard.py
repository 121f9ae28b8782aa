"""The dashboard route: GET /dashboard serves the web console's single page (no key: it asks for one)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router

from hookline.api import dashboard_page as dashboard

router = Router()
PATH = "/dashboard"


@router.get(PATH, include_in_schema=False)
def dashboard_page() -> Response[str]:
    """Returns the dashboard's HTML with its Content-Security-Policy."""
    html, headers = dashboard.page()
    return Response(200, "text/html; charset=utf-8", html, headers=headers)
