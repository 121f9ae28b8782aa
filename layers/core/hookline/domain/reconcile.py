"""The values reconciliation exchanges: a live job as the live index projects it, and the rebuild marks."""

from __future__ import annotations

from dataclasses import dataclass

from hookline.domain.models import FlowControl, JobStatus, Member


@dataclass(frozen=True)
class LiveJob:
    """What reconciliation knows of a live job: enough to index it again, nothing more (never its body)."""

    tenant: str
    job_id: str
    status: JobStatus
    generation: int
    due_ms: int
    shard: int
    flow: FlowControl
    lease_expires_at_ms: int | None = None

    def member(self) -> Member:
        """Returns this job's Redis index member for its current generation."""
        return Member(self.tenant, self.job_id, self.generation, self.flow)


@dataclass(frozen=True)
class RebuildMarks:
    """What Redis remembers of one shard's reconciliation.

    Attributes:
        epoch: Written when the shard's consumer group is created, so a Redis that lost its data (a flush, a
            fail-over to an empty replica) comes back with a new one, or none.
        rebuilt: The epoch whose full rebuild last completed; unequal to epoch means rebuild everything.
        cursor_mode: The scan the cursor belongs to ("due", or "full:<epoch>").
        cursor: Where that scan stopped at its last deadline (opaque to the use case), None at the start.
    """

    epoch: str | None
    rebuilt: str | None
    cursor_mode: str | None = None
    cursor: str | None = None

    @property
    def lost(self) -> bool:
        """Tells whether Redis lost its state since the last complete rebuild (or never had one)."""
        return self.epoch is None or self.epoch != self.rebuilt


@dataclass(frozen=True)
class UnindexedJob:
    """A live job DynamoDB holds that a write could not index in Redis: its member and due time."""

    member: Member
    due_ms: int


@dataclass(frozen=True)
class UnindexedJobs:
    """One shard's jobs written while Redis did not answer, noted so the reaper indexes them within seconds.

    Attributes:
        shard: The shard.
        jobs: The jobs noted, when they fit the note (at most a bounded number).
        overflow: More jobs were noted than fit: the reaper reads the shard's every live job instead.
        version: Grows with every note, so the note is cleared only if nothing was added since it was read.
    """

    shard: int
    jobs: tuple[UnindexedJob, ...]
    overflow: bool
    version: int
