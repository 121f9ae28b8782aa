"""Named queue routes: create or replace, list, get (with live figures), delete, pause, resume."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path

from hookline.api.context import container
from hookline.api.errors import error_responses
from hookline.api.gate import principal
from hookline.api.queue_views import QueueListView, QueueView, queue_view
from hookline.api.scopes import requires
from hookline.domain.queues import QUEUE_NAME_PATTERN, QueueRequest

router = Router()

QueueName = Annotated[
    str,
    Path(
        min_length=1,
        max_length=64,
        pattern=QUEUE_NAME_PATTERN,
        description="The queue's name: letters, digits, '.', '_' and '-'.",
    ),
]
_READ_ERRORS = error_responses(401, 403, 404, 422, 429, 503)
_WRITE_ERRORS = error_responses(400, 401, 403, 404, 409, 413, 415, 422, 429, 503)


def _ok(model: type[Any], description: str, status: int = 200) -> dict[int, Any]:
    return {
        status: {"description": description, "content": {content_types.APPLICATION_JSON: {"model": model}}}
    }


@router.put(
    "/v1/queues/<name>",
    summary="Create or replace a queue",
    tags=["queues"],
    operation_id="putQueue",
    responses={**_ok(QueueView, "Replaced"), **_ok(QueueView, "Created", 201), **_WRITE_ERRORS},
)
@requires("queues:write")
def put_queue(name: QueueName, request: QueueRequest) -> Response[QueueView]:
    """Creates a queue, or replaces its settings (with `version`: only if still at that version, else 409).

    Rate limit, concurrency and pause apply live, to jobs already waiting; the retry and timeout defaults
    are copied into each job at submit.
    """
    queue, created = container().queues.put(principal().tenant, name, request)
    return Response(
        status_code=201 if created else 200,
        content_type=content_types.APPLICATION_JSON,
        body=queue_view(queue),
    )


@router.get(
    "/v1/queues",
    summary="List queues",
    tags=["queues"],
    operation_id="listQueues",
    responses={**_ok(QueueListView, "Every queue, by name"), **_READ_ERRORS},
)
@requires("queues:read")
def list_queues() -> QueueListView:
    """Returns every queue of the caller, by name."""
    return QueueListView(queues=[queue_view(q) for q in container().queues.list_all(principal().tenant)])


@router.get(
    "/v1/queues/<name>",
    summary="Get a queue and its live figures",
    tags=["queues"],
    operation_id="getQueue",
    responses={**_ok(QueueView, "The queue"), **_READ_ERRORS},
)
@requires("queues:read")
def get_queue(name: QueueName) -> QueueView:
    """Returns a queue with its live figures: waiting, in flight, started in the current rate window."""
    state = container().queues.get(principal().tenant, name)
    return queue_view(state.queue, state.figures)


@router.delete(
    "/v1/queues/<name>",
    summary="Delete a queue",
    tags=["queues"],
    operation_id="deleteQueue",
    responses={**_ok(QueueView, "The queue as it was"), **_READ_ERRORS},
)
@requires("queues:write")
def delete_queue(name: QueueName) -> QueueView:
    """Deletes a queue; its waiting jobs are released and go on, limited by no queue."""
    return queue_view(container().queues.delete(principal().tenant, name))


@router.post(
    "/v1/queues/<name>/pause",
    summary="Pause a queue",
    tags=["queues"],
    operation_id="pauseQueue",
    responses={**_ok(QueueView, "The queue, paused"), **_WRITE_ERRORS},
)
@requires("queues:write")
def pause_queue(name: QueueName) -> QueueView:
    """Pauses a queue: its jobs are still accepted, but none of their deliveries starts (no attempt spent)."""
    return queue_view(container().queues.pause(principal().tenant, name))


@router.post(
    "/v1/queues/<name>/resume",
    summary="Resume a queue",
    tags=["queues"],
    operation_id="resumeQueue",
    responses={**_ok(QueueView, "The queue, running"), **_WRITE_ERRORS},
)
@requires("queues:write")
def resume_queue(name: QueueName) -> QueueView:
    """Resumes a queue and releases its waiting jobs at once."""
    return queue_view(container().queues.resume(principal().tenant, name))
