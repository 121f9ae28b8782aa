"""Indexing a job DynamoDB holds: in Redis, and when Redis fails, in a note the reaper reads every second.

Every writer that makes a job live (submit, a cron firing, replay) writes DynamoDB first and indexes second.
If the index write fails the job is safe (DynamoDB holds it) but Redis does not know it: without the note it
waits for the reaper's next due scan (up to a minute) or, if due later, until it falls due and that scan
meets it. The note (UnindexedLog) lets the reaper index it about a second after Redis answers again.

Given a circuit (usecases/circuit.py), a job is noted at once while Redis is known down, without waiting
for the client's retries.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from hookline.domain.errors import IndexUnavailable
from hookline.domain.models import Job
from hookline.ports import DueIndex, MetricsSink, UnindexedLog
from hookline.usecases.circuit import Circuit

logger = logging.getLogger(__name__)


def index_or_note(
    index: DueIndex,
    log: UnindexedLog | None,
    metrics: MetricsSink,
    job: Job,
    now_ms: int,
    new_member: bool = False,
    circuit: Circuit | None = None,
) -> None:
    """Indexes a stored live job; if Redis fails (or the circuit says it is down), notes it for the
    reaper. Never raises.

    new_member: the caller created the job's member a moment ago (DueIndex.index). The reaper's later
    indexing of a noted job passes no such claim: the failed call may have reached Redis.

    If the note fails too (DynamoDB failing as well), the job is still safe in DynamoDB: the reaper's due scan
    indexes it once it is due (within the scan's horizon) or at its next run, whichever is later.
    """
    _index_or_note(
        lambda: index.index(job.member(), job.shard, job.due_ms, now_ms, new_member=new_member),
        log,
        metrics,
        [job],
        now_ms,
        circuit,
    )


def index_many_or_note(
    index: DueIndex,
    log: UnindexedLog | None,
    metrics: MetricsSink,
    jobs: Sequence[Job],
    now_ms: int,
    new_member: bool = False,
    circuit: Circuit | None = None,
) -> None:
    """Indexes stored live jobs together (DueIndex.index_many), as index_or_note does one; if that fails,
    notes every one of them for the reaper, since any of them may have missed Redis. Never raises."""
    if not jobs:
        return
    entries = [(job.member(), job.shard, job.due_ms) for job in jobs]
    _index_or_note(lambda: index.index_many(entries, now_ms, new_member), log, metrics, jobs, now_ms, circuit)


def _index_or_note(
    index: Callable[[], object],
    log: UnindexedLog | None,
    metrics: MetricsSink,
    jobs: Sequence[Job],
    now_ms: int,
    circuit: Circuit | None,
) -> None:
    """Runs index(), which indexes jobs; if it raises, or the circuit says Redis is down, notes each of them
    for the reaper. Never raises."""
    if circuit is not None and not circuit.allows():
        metrics.count("IndexSkipped", len(jobs))
    else:
        try:
            index()
        except Exception as error:
            if circuit is not None and isinstance(error, IndexUnavailable):
                circuit.failed()
            logger.exception(
                "indexing failed; noting the jobs for the reaper",
                extra={"job_id": jobs[0].job_id, "jobs": len(jobs)},  # the first job, and how many
            )
            metrics.count("IndexFailed", len(jobs))
        else:
            if circuit is not None:
                circuit.succeeded()
            return
    for job in jobs:
        _note(log, metrics, job, now_ms)


def _note(log: UnindexedLog | None, metrics: MetricsSink, job: Job, now_ms: int) -> None:
    """Notes a job whose indexing failed for the reaper; never raises."""
    if log is None:
        return
    try:
        log.note_unindexed(job.member(), job.shard, job.due_ms, now_ms)
    except Exception:
        logger.exception(
            "noting an unindexed job failed; the reaper's due scan will index it",
            extra={"job_id": job.job_id},
        )
        metrics.count("UnindexedNoteFailed")
