"""Judging a scenario: what the receivers saw against what DynamoDB holds and the behaviours dictate."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable

from hookline.domain.models import Job
from tests.chaos.probes import redis_holds
from tests.chaos.receivers import Delivery
from tests.chaos.summary import Summary
from tests.chaos.world import Expectation, World

# The engine stores due times in whole ms and computes a Retry-After wait with int(): allow that rounding.
EARLY_TOLERANCE_MS = 2


def by_job(world: World) -> dict[str, list[Delivery]]:
    """Returns every delivery of the main receiver, grouped by job id, in arrival order."""
    grouped: dict[str, list[Delivery]] = defaultdict(list)
    for delivery in world.receiver.deliveries:
        grouped[delivery.job_id].append(delivery)
    return grouped


def first_arrival_after(world: World, job_ids: Iterable[str], after_ms: int) -> dict[str, int | None]:
    """Returns, per job, the first arrival after after_ms (None: none yet)."""
    grouped = by_job(world)
    return {
        job_id: next((d.arrival_ms for d in grouped.get(job_id, []) if d.arrival_ms > after_ms), None)
        for job_id in job_ids
    }


def worst_lateness_s(world: World, job_ids: Iterable[str], since_ms: int) -> float | None:
    """Returns the worst of (first arrival - max(due, since_ms)) over jobs; inf if one never arrived."""
    grouped = by_job(world)
    worst: float | None = None
    for job_id in job_ids:
        arrivals = grouped.get(job_id)
        late_s = (
            float("inf")
            if not arrivals
            else (arrivals[0].arrival_ms - max(world.expected[job_id].due_ms, since_ms)) / 1000
        )
        worst = late_s if worst is None else max(worst, late_s)
    return worst


def undelivered_at(world: World, moment_ms: int) -> list[str]:
    """Returns accepted jobs with no delivery before moment_ms."""
    grouped = by_job(world)
    return [
        job_id
        for job_id in world.expected
        if not any(d.arrival_ms < moment_ms for d in grouped.get(job_id, []))
    ]


def summarize(world: World, summary: Summary) -> Summary:
    """Fills the job counts of summary from the receivers, the ledger and DynamoDB."""
    stored = world.jobs()
    grouped = by_job(world)
    summary.submitted = len(world.expected)
    for job_id, expectation in world.expected.items():
        deliveries = grouped.get(job_id, [])
        summary.delivered += bool(deliveries)
        summary.duplicates += max(0, len(deliveries) - expectation.deliveries)
        _count_early(summary, expectation, deliveries)
        job = stored.get(job_id)
        if job_id in world.stuck_ids or (job is not None and job.status.is_live):
            summary.stuck += 1
            stuck_sample = summary.extra.setdefault("stuck_sample", [])
            if len(stuck_sample) < 5 and job is not None:
                stuck_sample.append(f"{_describe(job, deliveries)}; Redis: {redis_holds(world, job)}")
        elif job is None or not deliveries:
            summary.lost += 1
        elif job.status.value != expectation.behaviour.final_status:
            summary.wrong_state += 1
    _context(world, summary, stored, grouped)
    summary.duration_s = time.monotonic() - world.started_s
    return summary


def _count_early(summary: Summary, expectation: Expectation, deliveries: list[Delivery]) -> None:
    """Counts deliveries before the job's due time or before a Retry-After the engine had been given."""
    for delivery in deliveries:
        allowed_ms = max(expectation.due_ms, delivery.floor_ms - EARLY_TOLERANCE_MS)
        if delivery.arrival_ms < allowed_ms:
            summary.early += 1
            worst = max(summary.extra.get("worst_early_s", 0.0), (allowed_ms - delivery.arrival_ms) / 1000)
            summary.extra["worst_early_s"] = round(worst, 3)


def _context(
    world: World, summary: Summary, stored: dict[str, Job], grouped: dict[str, list[Delivery]]
) -> None:
    """Adds the figures that help read the verdicts: lateness under load, answers, memory, restarts."""
    lateness = sorted(
        grouped[job_id][0].arrival_ms - e.due_ms
        for job_id, e in world.expected.items()
        if grouped.get(job_id)
    )
    if lateness:
        # First deliveries against due times, over the whole run: the load's own lateness, for reading
        # the recovery figures (a backlog makes everything late, faults or not).
        summary.extra["lateness_ms_p50_p99_max"] = [
            lateness[len(lateness) // 2],
            lateness[min(len(lateness) - 1, len(lateness) * 99 // 100)],
            lateness[-1],
        ]
        summary.extra["worst_lateness_s_by_due_5s"] = _timeline(world, grouped)
    summary.extra["answers"] = {str(k): v for k, v in sorted(world.answers.items())}
    unaccepted = [job for job_id, job in stored.items() if job_id not in world.expected]
    if unaccepted:
        # Stored although the API did not answer 201 (a batch or submit that failed after the write).
        summary.extra["stored_without_201"] = len(unaccepted)
        summary.extra["stored_without_201_live"] = sum(job.status.is_live for job in unaccepted)
    if world.elsewhere.count():
        summary.extra["redirected_elsewhere"] = world.elsewhere.count()
    if world.executor_peak_kb:
        summary.extra["executor_peak_rss_mb"] = round(max(world.executor_peak_kb.values()) / 1024, 1)
    restarts = {slot.name: slot.restarts for slot in world.fleet.slots.values() if slot.restarts}
    if restarts:
        summary.extra["process_restarts"] = restarts


def check(summary: Summary) -> Summary:
    """Records the general assertions' failures in summary (the scenario adds its own)."""
    if summary.lost:
        summary.failures.append(f"lost {summary.lost}")
    if summary.stuck:
        summary.failures.append(f"stuck {summary.stuck}")
    if summary.early:
        summary.failures.append(f"early {summary.early}")
    if summary.wrong_state:
        summary.failures.append(f"wrong final state {summary.wrong_state}")
    if summary.duplicates > summary.in_flight:
        summary.failures.append(f"duplicates {summary.duplicates} > in flight {summary.in_flight}")
    if summary.submitted == 0:
        summary.failures.append("no job was accepted")
    return summary


def _timeline(world: World, grouped: dict[str, list[Delivery]]) -> dict[str, float]:
    """Returns the worst first-delivery lateness per 5 s of due time, from the first due time on."""
    first_due = min(e.due_ms for e in world.expected.values())
    worst: dict[int, int] = {}
    for job_id, expectation in world.expected.items():
        if grouped.get(job_id):
            bucket = (expectation.due_ms - first_due) // 5000 * 5
            late = grouped[job_id][0].arrival_ms - expectation.due_ms
            worst[bucket] = max(worst.get(bucket, late), late)
    return {f"+{bucket:03d}s": round(late / 1000, 1) for bucket, late in sorted(worst.items())}


def _describe(job: Job, deliveries: list[Delivery]) -> str:
    """Describes a job for a failure message: its stored state and what its receiver saw."""
    seen = ", ".join(f"#{d.number} attempt {d.attempt} {d.kind} at {d.arrival_ms}" for d in deliveries)
    return (
        f"{job.job_id} {job.status.value} gen {job.generation} attempt {job.attempt} due {job.due_ms} "
        f"lease {job.lease_expires_at_ms} error {job.last_error}; received: {seen or 'nothing'}"
    )
