"""Fan-out: starting executors while the ready streams hold work, up to a ceiling.

One executor holds at most `executor_concurrency` callbacks in flight. When submits outpace that, entries
wait in the ready streams unread; the promoter, which runs while anything is due, notices and starts more
executors (async Lambda invokes in AWS, threads in the local stack). Lambda does not say how many
executors run, so the promoters keep a ledger of those the fan-out started, shared in Redis
(ports.ExecutorLedger): a launch counts as running for as long as an executor reads (`executor_run_ms`),
and as starting for its first `start_ms` (a cold start: until it reads, the backlog does not show it).

Each check (every `check_interval_ms`) asks for one executor per `backlog_per_executor` unread entries
(the executors reading now are busy, or the entries would not be unread), less those still starting,
at most `max_launch_per_check`, and never more running than `max_executors`. So a backlog that lasts
brings the fleet up to the ceiling within ceiling / max_launch_per_check checks, and keeps it there while
executors end their runs and are replaced.

Executors only when there is work (with an ExecutorPresence): no schedule starts executors; every one is
started here. A check that finds any unread entry while no executor marks itself alive asks for one (at
least one may run even with max_executors 0), and an executor ends once idle (usecases/execute.py), so an
idle deployment runs none. A member due within lead_ms counts as work too: the executor's start (a cold
start in Lambda) then overlaps the wait for the due time instead of following it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from hookline.domain import constants
from hookline.domain.errors import IndexUnavailable
from hookline.ports import Clock, ExecutorLauncher, ExecutorLedger, ExecutorPresence, MetricsSink, ReadyStream
from hookline.usecases.promote import Promoter

logger = logging.getLogger(__name__)


class NoLauncher:
    """Starts nothing: where no execute function is configured (sam local, tests)."""

    def launch(self, count: int) -> int:
        """Starts nothing."""
        return 0


@dataclass(frozen=True)
class FanOutPolicy:
    """When and how much the scaler fans out.

    Attributes:
        backlog_per_executor: Entries no executor has read yet that justify one more executor (two
            executors' worth of concurrency by default).
        max_executors: The most fanned-out executors running at once, over every promoter (the
            scheduled ones come on top).
        max_launch_per_check: At most this many executors started by one check (each is one Lambda
            invoke on the promoter's thread).
        check_interval_ms: How often the backlog is read.
        start_ms: How long a started executor counts as starting: launched, not yet reading.
        executor_run_ms: How long a started executor reads (the execute function's timeout less the
            time it keeps for its last callbacks); after that it no longer counts.
        lead_ms: Idle mode: how long before the earliest due time an executor is started if none runs.
    """

    backlog_per_executor: int = 64
    max_executors: int = constants.FAN_OUT_MAX_EXECUTORS
    max_launch_per_check: int = 10
    check_interval_ms: int = 1_000
    start_ms: int = 10_000
    executor_run_ms: int = constants.EXECUTOR_READ_MS
    # Idle mode: with no executor running, one is started this long before the earliest due time. Below
    # the executor's idle time (EXECUTOR_IDLE_MS), so it still reads when the member falls due.
    lead_ms: int = 5_000


class ExecutorScaler:
    """Reads the ready streams' backlog and starts executors when it is high."""

    def __init__(
        self,
        stream: ReadyStream,
        clock: Clock,
        shards: Sequence[int],
        launcher: ExecutorLauncher,
        metrics: MetricsSink,
        ledger: ExecutorLedger,
        policy: FanOutPolicy | None = None,
        presence: ExecutorPresence | None = None,
    ) -> None:
        self._stream = stream
        self._presence = presence
        self._clock = clock
        self._shards = list(shards)
        self._launcher = launcher
        self._metrics = metrics
        self._ledger = ledger
        self._policy = policy or FanOutPolicy()
        self._next_check_ms = 0

    def backlog(self) -> int:
        """Returns the entries in the ready streams that no executor has read yet.

        Entries being worked on, or pending under an executor that died, are not a backlog: more
        executors would not finish them sooner (a recoverer re-delivers the dead one's, which then count
        again). Counting them, as the in-flight index does, launched executors in a loop through a
        DynamoDB outage.
        """
        return sum(self._stream.undelivered(shard) for shard in self._shards)

    def check(self, next_due_ms: int | None = None) -> int:
        """Starts executors when the backlog calls for them; returns how many were started.

        next_due_ms: the earliest due time the promoter knows; in idle mode a member due within lead_ms
        starts an executor if none runs.
        """
        now_ms = self._clock.now_ms()
        if now_ms < self._next_check_ms:
            return 0
        policy = self._policy
        self._next_check_ms = now_ms + policy.check_interval_ms
        backlog = self.backlog()
        wanted = backlog // policy.backlog_per_executor
        ceiling = policy.max_executors
        soon = next_due_ms is not None and next_due_ms - now_ms <= policy.lead_ms
        idle = (backlog > 0 or soon) and self._presence is not None and not self._presence.executor_alive()
        if wanted <= 0 and idle:
            # Work and no executor reading it: one (the ledger's starting ones count, so one at a time).
            wanted, ceiling = 1, max(1, ceiling)
        if wanted <= 0:
            return 0
        grant = self._ledger.reserve_executors(
            now_ms,
            wanted,
            policy.max_launch_per_check,
            ceiling,
            policy.executor_run_ms,
            policy.start_ms,
        )
        if not grant.tokens:
            return 0
        started = self._launcher.launch(len(grant.tokens))
        if started < len(grant.tokens):
            # The launcher stopped at a refusal (throttling, permissions): what did not start must not count
            # against the ceiling. If this release fails, those tokens count until executor_run_ms passes.
            self._ledger.release_executors(grant.tokens[started:])
        if started:
            self._metrics.count("ExecutorsLaunched", started)
        self._metrics.gauge("FanOutExecutors", grant.running - (len(grant.tokens) - started))
        return started

    def promote_until(self, promoter: Promoter, deadline_ms: int) -> int:
        """Runs the promoter until deadline_ms, checking the backlog between its ticks; returns jobs moved.

        check() reads the backlog at most every check_interval_ms, and the promoter ticks at least every
        max_sleep_ms, so the backlog is read about once a check interval within one run (one run, so the
        promoter's per-shard waiters start once per invocation).
        """
        return promoter.run(deadline_ms, between=lambda: self._check_quietly(promoter.next_due_ms))

    def _check_quietly(self, next_due_ms: int | None = None) -> None:
        try:
            self.check(next_due_ms)
        except IndexUnavailable:
            # The backlog (or the ledger) cannot be read while Redis is away; the promoter's loop waits the
            # outage out.
            return
