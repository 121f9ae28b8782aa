"""One summary line per fault scenario, collected for the terminal and written to .chaos/summary.json."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tests.chaos.processes import REPO

RESULTS_DIR = REPO / ".chaos"
SUMMARY_FILE = RESULTS_DIR / "summary.json"

# The recovery targets the fault suite holds the engine to (docs/timing.md, "Recovery times this gives").
RECOVERY_TARGET_S = 15.0  # a killed executor's jobs are delivered again within this
PROMOTION_TARGET_S = 1.0  # promotion resumes within this of Redis answering again


@dataclass
class Summary:
    """What one scenario did to the jobs, and how fast it recovered.

    Attributes:
        scenario: The scenario's name.
        submitted: Jobs the API accepted (201, or 201 inside a batch).
        delivered: Accepted jobs the receivers saw at least once.
        lost: Accepted jobs never delivered that nothing can deliver any more (missing or final in DynamoDB).
        duplicates: Deliveries beyond what each job's receiver behaviour asks for.
        in_flight: Deliveries in flight when the fault struck (the most duplicates a fault may cause).
        early: Deliveries before the job's due time or before a Retry-After the engine had been given.
        stuck: Accepted jobs still scheduled or running in DynamoDB when the scenario's deadline passed.
        wrong_state: Jobs that ended in another status than their receiver dictates.
        recovery_s: Seconds from a SIGKILL until the last of the killed executor's live jobs arrived again.
        late_after_redis_s: Worst lateness, counted from when Redis answered again, of due jobs Redis held
            (with a backlog due during the outage, this is how long the executors took to drain it).
        resumed_after_redis_s: Seconds from Redis answering again until the first delivery of a job that
            fell due while it was away: when promotion and delivery resumed.
        rebuild_s: Worst lateness, from when Redis answered again, of jobs Redis lost or never indexed.
        aws_recovery_s: Worst lateness, from when the AWS endpoint came back, of jobs due during the cut.
        extra: Scenario-specific figures (memory, statuses answered, counts per behaviour).
        failures: The assertions that did not hold, in words.
    """

    scenario: str
    submitted: int = 0
    delivered: int = 0
    lost: int = 0
    duplicates: int = 0
    in_flight: int = 0
    early: int = 0
    stuck: int = 0
    wrong_state: int = 0
    recovery_s: float | None = None
    late_after_redis_s: float | None = None
    resumed_after_redis_s: float | None = None
    rebuild_s: float | None = None
    aws_recovery_s: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    duration_s: float = 0.0

    @property
    def passed(self) -> bool:
        """Tells whether every assertion held."""
        return not self.failures

    def line(self) -> str:
        """Returns the one-line summary."""
        parts = [
            f"submitted={self.submitted}",
            f"delivered={self.delivered}",
            f"lost={self.lost}",
            f"duplicates={self.duplicates} (in flight at fault {self.in_flight})",
            f"early={self.early}",
            f"stuck={self.stuck}",
            f"wrong_state={self.wrong_state}",
        ]
        late_target = PROMOTION_TARGET_S if self.resumed_after_redis_s is None else None
        figures = [
            ("killed executor's jobs again after", self.recovery_s, RECOVERY_TARGET_S),
            ("delivery resumed after Redis returned in", self.resumed_after_redis_s, PROMOTION_TARGET_S),
            ("worst lateness after Redis returned", self.late_after_redis_s, late_target),
            ("Redis-lost jobs late by", self.rebuild_s, RECOVERY_TARGET_S),
            ("jobs due in the AWS cut late by", self.aws_recovery_s, RECOVERY_TARGET_S),
        ]
        for label, value, target in figures:
            if value is not None:
                goal = "" if target is None else f" (target {target:g} s)"
                parts.append(f"{label} {seconds(value)}{goal}")
        verdict = "PASS" if self.passed else "FAIL: " + "; ".join(self.failures)
        return f"{self.scenario}: " + ", ".join(parts) + f" [{self.duration_s:.0f} s] {verdict}"

    def as_json(self) -> dict[str, Any]:
        """Returns the summary as JSON-ready data (infinite figures as null plus a flag)."""
        data = asdict(self)
        for name in (
            "recovery_s",
            "late_after_redis_s",
            "resumed_after_redis_s",
            "rebuild_s",
            "aws_recovery_s",
        ):
            if data[name] == float("inf"):
                data[name] = None
                data["extra"][f"{name}_never"] = True
        data["passed"] = self.passed
        return data


def seconds(value: float) -> str:
    """Formats a figure in seconds; infinity (it did not happen within the wait) as "never"."""
    return "never (not within the wait)" if value == float("inf") else f"{value:.1f} s"


def missed(label: str, value: float, target_s: float) -> str:
    """Words a figure that missed its target, for a summary's failures."""
    return f"{label}: {seconds(value)} (target {target_s:g} s)"


def write_json(summaries: list[Summary], scale: float) -> Path:
    """Merges summaries into .chaos/summary.json, keyed by scenario (a partial run keeps the others)."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    existing: dict[str, Any] = {}
    if SUMMARY_FILE.exists():
        try:
            existing = json.loads(SUMMARY_FILE.read_text()).get("scenarios", {})
        except (ValueError, AttributeError):
            existing = {}
    for summary in summaries:
        existing[summary.scenario] = {
            **summary.as_json(),
            "line": summary.line(),
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "scale": scale,
        }
    document = {"updated_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "pid": os.getpid(), "scenarios": existing}
    temporary = SUMMARY_FILE.with_suffix(".tmp")
    temporary.write_text(json.dumps(document, indent=2, sort_keys=True))
    temporary.replace(SUMMARY_FILE)
    return SUMMARY_FILE


def table(summaries: list[Summary]) -> list[str]:
    """Returns the summaries as a fixed-width table, one row per scenario."""
    header = (
        "scenario",
        "sub",
        "dlv",
        "lost",
        "dup",
        "infl",
        "early",
        "stuck",
        "wrong",
        "recov",
        "resume",
        "late",
        "rebuild",
        "aws",
        "result",
    )
    rows = [header]
    for s in summaries:
        rows.append(
            (
                s.scenario,
                str(s.submitted),
                str(s.delivered),
                str(s.lost),
                str(s.duplicates),
                str(s.in_flight),
                str(s.early),
                str(s.stuck),
                str(s.wrong_state),
                _figure(s.recovery_s),
                _figure(s.resumed_after_redis_s),
                _figure(s.late_after_redis_s),
                _figure(s.rebuild_s),
                _figure(s.aws_recovery_s),
                "PASS" if s.passed else "FAIL",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in rows]


def _figure(value: float | None) -> str:
    if value is None:
        return "-"
    return "never" if value == float("inf") else f"{value:.1f}s"
