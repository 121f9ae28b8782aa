"""The log of jobs written while Redis did not answer (hookline.ports.UnindexedLog), in memory."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from hookline.domain.models import Member
from hookline.domain.reconcile import UnindexedJob, UnindexedJobs
from tests.fakes.faults import Faults, dynamo_down, port_call


class FakeUnindexedLog:
    """Each shard's note, as adapters/dynamo/unindexed.py keeps it: bounded, versioned, cleared by version."""

    def __init__(self, max_noted: int = 2_000) -> None:
        self._lock = threading.Lock()
        self._max_noted = max_noted
        self.notes: dict[int, UnindexedJobs] = {}
        self._faults = Faults(dynamo_down)

    @property
    def faults(self) -> Faults:
        """Returns the fault plan of this fake's calls (default error: DynamoUnavailable)."""
        return self._faults

    @port_call
    def note_unindexed(self, member: Member, shard: int, due_ms: int, now_ms: int) -> None:
        """Adds the job to the shard's note, or marks the note overflowed once it is full."""
        with self._lock:
            note = self.notes.get(shard, UnindexedJobs(shard, (), False, 0))
            job = UnindexedJob(member, due_ms)
            if len(note.jobs) < self._max_noted:
                jobs = note.jobs if job in note.jobs else tuple(sorted((*note.jobs, job), key=_order))
                self.notes[shard] = UnindexedJobs(shard, jobs, note.overflow, note.version + 1)
            else:
                self.notes[shard] = UnindexedJobs(shard, note.jobs, True, note.version + 1)

    @port_call
    def unindexed(self, shards: Sequence[int]) -> list[UnindexedJobs]:
        """Returns the given shards' notes that exist."""
        with self._lock:
            return [self.notes[shard] for shard in sorted(set(shards)) if shard in self.notes]

    @port_call
    def clear_unindexed(self, shard: int, version: int) -> bool:
        """Deletes the shard's note if it is still at version."""
        with self._lock:
            note = self.notes.get(shard)
            if note is None or note.version != version:
                return False
            del self.notes[shard]
            return True


def _order(job: UnindexedJob) -> str:
    # The adapter returns a string set's entries sorted as "<due_ms> <member>" strings.
    return f"{job.due_ms} {job.member.encode()}"
