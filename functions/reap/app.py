"""The reap function: re-delivers abandoned work and rebuilds what Redis lost from DynamoDB."""

from dataclasses import asdict
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from hookline.domain import constants
from hookline.plumbing.bootstrap import start_function
from hookline.plumbing.heap import freeze_start_up_heap
from hookline.plumbing.invocation import deadline_ms
from hookline.plumbing.wiring import REAPER_DYNAMODB_CALL_MS

logger, tracer, sink, container = start_function()
# The run stops taking work this long before the invocation ends: room for one DynamoDB call started just
# before (bounded by the reaper's client, wiring.py) and for the handler's own return.
RESERVE_MS = constants.INVOCATION_SAFETY_MARGIN_MS + REAPER_DYNAMODB_CALL_MS
# The imports and the wiring live as long as the process: no collection rescans them (plumbing/heap.py).
freeze_start_up_heap()


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@sink.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Runs one reaper pass over every shard, then rebuilds at once any shard whose Redis lost its state."""
    deadline = deadline_ms(container.engine_clock, context, RESERVE_MS)
    # Refuses shard or bucket counts that would strand jobs; checked here, not at import, so a throttled
    # DynamoDB delays the work instead of ending the cold start (Container.start_up).
    container.start_up.ensure(deadline)
    report = container.reaper.watch(deadline)
    logger.info("reaped", extra=asdict(report))
    return asdict(report)
