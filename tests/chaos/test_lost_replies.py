"""Replies of applied DynamoDB writes lost on the way back: claims, finishes and creates.

Every process (the handlers, and the API the test drives in-process) reaches moto through
tests.chaos.lossy_proxy, which, once the world has warmed up, passes every second claim, finish (a first
attempt's UpdateItem, a later attempt's transaction) and create on
to moto, lets it apply, and resets the client's connection instead of returning the reply. The client sends
the write again, and the repeat fails the write's own condition. The engine must read that as its own success:
a claim as its attempt (not as another attempt's lease, which would cost a lease's wait, a false
`lease_expired` execution and a second attempt, and kill a job allowed one attempt without a callback), a
finish as recorded (not a lost hold whose retry nobody indexes), a create as created (not an error, after
which a client makes a second job).

Judged as the suite judges (nothing lost, early, stuck or in a wrong state, no duplicate: no attempt is in
flight when a reply is lost), and: every submit accepted (201; a batch 200 with 201 items), no job stored
without its 201, no `lease_expired` execution, and replies lost on each of the three kinds.
"""

from __future__ import annotations

import signal
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from hookline.domain.models import ExecutionOutcome
from tests.chaos import receivers
from tests.chaos.judge import check, summarize
from tests.chaos.processes import Child, MotoServer, wait_ready
from tests.chaos.receivers import now_ms
from tests.chaos.summary import RESULTS_DIR, Summary
from tests.chaos.world import EXTRA_WAIT_S, SCALE, TENANT, Options, World, scaled
from tests.support.redis_server import free_port

pytestmark = [pytest.mark.chaos, pytest.mark.timeout(int(150 + EXTRA_WAIT_S + 30 * SCALE))]

MakeWorld = Callable[[Options], World]
Record = Callable[[Summary], None]

OK = receivers.ok(0.02)
# Answers 429 with Retry-After: 1 once: its first attempt ends in a finish that schedules a retry.
RETRY_ONCE = receivers.throttle_429(1, 1)
LOSE_EVERY = 2  # the proxy loses the reply of every second claim, finish and create
# A first attempt's finish is one UpdateItem, a later one's (after RETRY_ONCE's 429) a transaction.
KINDS = ("claim", "finish", "finish_later", "create")
LEAD_MS = 2_000  # each job falls due this long after its submit


class LossyProxy:
    """tests.chaos.lossy_proxy in a process of its own, in front of moto."""

    def __init__(self, target_port: int, log_path: Path) -> None:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = log_path
        log_path.unlink(missing_ok=True)
        command = [
            sys.executable, "-m", "tests.chaos.lossy_proxy",
            "--listen-port", str(port),
            "--target-port", str(target_port),
            "--lose-every", str(LOSE_EVERY),
        ]  # fmt: skip
        self.child = Child("lossy-proxy", command, log_path)
        wait_ready(self.child, lambda: "lossy-proxy ready" in self._log(), f"lossy proxy on port {port}")

    def start_losing(self) -> None:
        """Makes the proxy lose replies from now on (it relays faithfully until then)."""
        self.child.signal(signal.SIGUSR1)

    def _log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def lost(self) -> Counter[str]:
        """Returns how many replies were lost, per kind."""
        return Counter(
            line.removeprefix("lossy-proxy lost ").strip()
            for line in self._log().splitlines()
            if line.startswith("lossy-proxy lost ")
        )

    def close(self) -> None:
        """Kills the proxy."""
        self.child.kill()


def test_lost_replies_on_claim_finish_and_create(
    moto_server: MotoServer, make_world: MakeWorld, record: Record
) -> None:
    """Jobs allowed one attempt, and jobs retried once, submitted one by one through the API."""
    proxy = LossyProxy(
        int(moto_server.url.rsplit(":", 1)[1]), RESULTS_DIR / "logs" / "lost_replies-proxy.log"
    )
    try:
        world = make_world(
            Options(settings_env={"HOOKLINE_AWS_ENDPOINT": proxy.url}, behaviours=[OK, RETRY_ONCE])
        )
        world.warm_up(OK)
        proxy.start_losing()
        for number in range(scaled(24)):
            if number % 3 == 2:
                world.submit_one(RETRY_ONCE, now_ms() + LEAD_MS, max_attempts=3)
            else:
                world.submit_one(OK, now_ms() + LEAD_MS, max_attempts=1)
        world.settle(world.last_due_ms(), natural_s=2.0)

        summary = summarize(world, Summary("lost_replies"))
        lost = proxy.lost()
    finally:
        proxy.close()
    check(summary)
    summary.extra["lost_replies"] = dict(sorted(lost.items()))
    for kind in KINDS:
        if not lost[kind]:
            summary.failures.append(f"no reply lost on {kind}: the scenario did not exercise it")
    refused = {status: count for status, count in world.answers.items() if status >= 300}
    if refused:
        summary.failures.append(f"submits answered other than 201: {refused}")
    if summary.extra.get("stored_without_201"):
        summary.failures.append(f"jobs stored without a 201: {summary.extra['stored_without_201']}")
    taken_over = [
        job_id
        for job_id in world.expected
        if any(
            e.outcome is ExecutionOutcome.LEASE_EXPIRED for e in world.judge.jobs.executions(TENANT, job_id)
        )
    ]
    if taken_over:
        summary.failures.append(f"attempts recorded as lease_expired: {len(taken_over)} jobs")
    record(summary)
    assert summary.passed, summary.line()
