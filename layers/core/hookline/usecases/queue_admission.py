"""Does a delivery's named-queue check at dispatch: the queue's live pause, concurrency and rate.

Runs before the claim, so a refused or paused delivery spends no attempt and changes nothing in DynamoDB.
"""

from __future__ import annotations

from dataclasses import dataclass

from hookline.domain import constants
from hookline.domain.delivery import Slot, StreamEntry
from hookline.domain.errors import QueueNotFound
from hookline.domain.queues import Admission, QueueVerdict, limiter_name
from hookline.ports import MetricsSink, QueueGate, QueueStore


@dataclass(frozen=True)
class Parked:
    """The delivery's queue is paused: it was set aside (or had been finished already)."""


PARKED = Parked()


class QueueAdmission:
    """Asks a delivery's queue whether it may start; parks it while the queue is paused."""

    def __init__(self, gate: QueueGate, store: QueueStore, metrics: MetricsSink) -> None:
        self._gate = gate
        self._store = store
        self._metrics = metrics

    def admit(self, entry: StreamEntry, now_ms: int, slots: list[Slot]) -> int | Parked | None:
        """Returns None when the delivery may go on, the time to try again when a limiter refused it, or
        PARKED when its queue is paused (the entry is finished and the member parked: no attempt spent).

        A slot taken goes into `slots` (released when processing ends). A queue with no live settings in
        Redis is read from DynamoDB and its settings written; a queue that no longer exists limits nothing.
        """
        member = entry.member
        queue = member.flow.queue
        if queue is None:
            return None
        lease_ms = now_ms + constants.LONGEST_ATTEMPT_MS
        verdict = self._gate.admit(member.tenant, queue, entry, now_ms, lease_ms)
        if verdict.admission is Admission.UNKNOWN:
            try:
                self._gate.write_settings(self._store.get(member.tenant, queue))
            except QueueNotFound:
                self._metrics.count("QueueGone")
                return None
            verdict = self._gate.admit(member.tenant, queue, entry, now_ms, lease_ms)
        return self._decide(entry, queue, verdict, now_ms, slots)

    def _decide(
        self, entry: StreamEntry, queue: str, verdict: QueueVerdict, now_ms: int, slots: list[Slot]
    ) -> int | Parked | None:
        member = entry.member
        if verdict.admission is Admission.PAUSED:
            self._gate.park(entry, queue, now_ms)
            self._metrics.count("QueueParked")
            return PARKED
        if verdict.admission is Admission.REFUSED:
            self._metrics.count("QueueLimited")
            return verdict.retry_at_ms
        if verdict.admission is Admission.UNKNOWN:
            # Written a moment ago and gone again (a flush between the two calls): try again shortly.
            return now_ms + constants.EXECUTOR_BLOCK_MS
        if verdict.took_slot:
            slots.append(Slot(member.tenant, limiter_name(queue), f"{member.job_id}:{member.generation}"))
        return None
