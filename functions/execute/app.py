"""The execute function: delivers ready callbacks until its invocation is nearly over, or until it has had
nothing to do for HOOKLINE_EXECUTOR_IDLE_MS (the promoter starts another when work comes)."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from hookline.domain import constants
from hookline.plumbing.bootstrap import start_function
from hookline.plumbing.heap import freeze_start_up_heap
from hookline.plumbing.invocation import deadline_ms

logger, tracer, sink, container = start_function()
# Stop taking work early enough for the longest callback, and the recording of its outcome, to finish before
# the invocation ends.
RESERVE_MS = int((constants.MAX_TIMEOUT_S + constants.ATTEMPT_WRAP_UP_S) * 1000)
# The imports and the wiring live as long as the process: no collection rescans them (plumbing/heap.py).
freeze_start_up_heap()


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@sink.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Reads the ready streams and delivers with bounded concurrency."""
    deadline = deadline_ms(container.engine_clock, context, RESERVE_MS)
    # Refuses shard or bucket counts that would strand jobs; checked here, not at import, so a throttled
    # DynamoDB delays the work instead of ending the cold start (Container.start_up).
    container.start_up.ensure(deadline)
    processed = container.executor.run(deadline)
    return {"processed": processed}
