"""Fan-out: starting more executors while the ready streams back up, between promoter runs.

EventBridge starts one executor a minute, and one executor holds at most `executor_concurrency`
callbacks in flight. When submits outpace that, entries wait in the ready streams; the promoter, which
runs all the time, notices and starts more executors (async Lambda invokes in AWS, threads in the local
stack). Nothing counts the executors already running (Lambda does not say), so the scaler bounds itself
instead: a few launches per check, then a cool-down long enough for the new executors to start reading.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hookline.domain.errors import IndexUnavailable
from hookline.ports import Clock, ExecutorLauncher, MetricsSink, ReadyStream
from hookline.usecases.promote import Promoter


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
        max_launch_per_check: At most this many executors started by one check.
        check_interval_ms: How often the backlog is read.
        cooldown_ms: After a launch, how long to wait before launching again, so that new executors
            (a cold start takes seconds) get to read before they are judged insufficient.
    """

    backlog_per_executor: int = 64
    max_launch_per_check: int = 4
    check_interval_ms: int = 1_000
    cooldown_ms: int = 10_000


class ExecutorScaler:
    """Reads the ready streams' backlog and starts executors when it is high."""

    def __init__(
        self,
        stream: ReadyStream,
        clock: Clock,
        shards: Sequence[int],
        launcher: ExecutorLauncher,
        metrics: MetricsSink,
        policy: FanOutPolicy | None = None,
    ) -> None:
        self._stream = stream
        self._clock = clock
        self._shards = list(shards)
        self._launcher = launcher
        self._metrics = metrics
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

    def check(self) -> int:
        """Starts executors when the backlog calls for them; returns how many were started."""
        now_ms = self._clock.now_ms()
        if now_ms < self._next_check_ms:
            return 0
        policy = self._policy
        wanted = min(policy.max_launch_per_check, self.backlog() // policy.backlog_per_executor)
        started = self._launcher.launch(wanted) if wanted > 0 else 0
        self._next_check_ms = now_ms + (policy.cooldown_ms if started else policy.check_interval_ms)
        if started:
            self._metrics.count("ExecutorsLaunched", started)
        return started

    def promote_until(self, promoter: Promoter, deadline_ms: int) -> int:
        """Runs the promoter until deadline_ms, checking the backlog between its ticks; returns jobs moved.

        check() reads the backlog at most every check_interval_ms, and the promoter ticks at least every
        max_sleep_ms, so the backlog is read about once a check interval within one run (one run, so the
        promoter's per-shard waiters start once per invocation).
        """
        return promoter.run(deadline_ms, between=self._check_quietly)

    def _check_quietly(self) -> None:
        try:
            self.check()
        except IndexUnavailable:
            # The backlog cannot be read while Redis is away; the promoter's loop waits the outage out.
            return
