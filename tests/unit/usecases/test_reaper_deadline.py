"""The reaper fits its invocation: no call starts that could end after it, and DynamoDB failing does not
end the run (usecases/reap.py, functions/reap/app.py RESERVE_MS, wiring.py REAPER_DYNAMODB_CALL_MS)."""

from __future__ import annotations

from hookline.domain import constants
from hookline.plumbing.wiring import REAPER_DYNAMODB_CALL_MS
from hookline_local.template import function_timeout_s, load_template, schedules
from tests.fakes.faults import DynamoUnavailable
from tests.unit.usecases.world import T0, World

# What functions/reap/app.py keeps back at the end of a run.
RESERVE_MS = constants.INVOCATION_SAFETY_MARGIN_MS + REAPER_DYNAMODB_CALL_MS
TIMEOUT_MS = function_timeout_s(load_template(), "ReapFunction") * 1000


def test_given_dynamodb_stalling_every_call_when_the_reaper_watches_then_it_ends_within_its_invocation(
    world: World,
) -> None:
    def stall() -> BaseException:
        # A call to a DynamoDB that never answers takes the reaper's client its whole bound, then fails.
        world.clock.advance(REAPER_DYNAMODB_CALL_MS)
        return DynamoUnavailable("read timed out")

    world.submit(delay_s=5)
    world.store.faults.fail("live_jobs", times=1_000, error=stall)
    world.unindexed.faults.fail("unindexed", times=1_000, error=stall)
    invocation_end_ms = T0 + TIMEOUT_MS

    report = world.reaper().watch(invocation_end_ms - RESERVE_MS)

    assert world.clock.now_ms() <= invocation_end_ms - constants.INVOCATION_SAFETY_MARGIN_MS
    assert world.store.faults.calls("live_jobs") > 1  # the run went on after a failed call
    assert report.reconcile_complete == {0: False}
    assert world.metrics.counts["ReapStepFailed"] >= 1


def test_given_the_reap_schedule_when_a_run_keeps_its_reserve_then_it_watches_until_the_next_tick() -> None:
    [rate_s] = [spec.rate_s for spec in schedules(load_template()) if spec.function_id == "ReapFunction"]

    assert rate_s * 1000 <= TIMEOUT_MS - RESERVE_MS
