"""The promote function: moves due jobs onto the ready streams until its invocation is nearly over, or
until nothing falls due within the idle horizon (idle mode, hookline.usecases.idle).

Between its ticks it reads the ready streams' backlog and starts executors: one when work waits and none
runs, more while the streams back up (hookline.usecases.scale).
"""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from hookline.plumbing.bootstrap import start_function
from hookline.plumbing.heap import freeze_start_up_heap
from hookline.plumbing.invocation import deadline_ms

logger, tracer, sink, container = start_function()
# The imports and the wiring live as long as the process: no collection rescans them (plumbing/heap.py).
freeze_start_up_heap()


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@sink.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Promotes due jobs in a loop (EventBridge starts one invocation a minute, an index call of a job due
    soon one when none runs; overlaps are safe)."""
    deadline = deadline_ms(container.engine_clock, context)
    # Refuses shard or bucket counts that would strand jobs; checked here, not at import, so a throttled
    # DynamoDB delays the work instead of ending the cold start (Container.start_up).
    container.start_up.ensure(deadline)
    moved = container.fan_out.promote_until(container.promoter, deadline)
    return {"promoted": moved}
