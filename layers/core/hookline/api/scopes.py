"""Which scope each route needs: declared on its handler, checked by the gate before the body is parsed.

Powertools validates a route's parameters and body before the handler runs, so a scope checked inside the
handler would come after validation: a key without the scope would learn from a 422 what the route takes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.event_handler.api_gateway import Route

Handler = TypeVar("Handler", bound=Callable[..., Any])
_ATTRIBUTE = "hookline_scope"


def requires(scope: str) -> Callable[[Handler], Handler]:
    """Declares that a route's handler needs scope (the handler itself is returned unchanged)."""

    def declare(handler: Handler) -> Handler:
        setattr(handler, _ATTRIBUTE, scope)
        return handler

    return declare


def scope_of(handler: Callable[..., Any]) -> str | None:
    """Returns the scope a handler declared with requires(), or None."""
    scope = getattr(handler, _ATTRIBUTE, None)
    return scope if isinstance(scope, str) else None


def matched_route(app: APIGatewayRestResolver, method: str, path: str) -> Route | None:
    """Returns the route the resolver will call for method and path, or None (it will answer 404 or 405).

    The same walk as the resolver's own: static routes first, the first whose method and rule match.
    """
    path = app._remove_prefix(path)
    for route in app._static_routes + app._dynamic_routes:
        if route.method == method.upper() and route.rule.match(path):
            return route
    return None
