"""Shared vocabulary of the Redis contract tests: members, entries and the expected state of a shard."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hookline.domain.models import FlowControl, Member

A = Member("t", "a", 1)
B = Member("t", "b", 1)
C = Member("t", "c", 1)
# A member carrying flow control, so the encoded form with its JSON tail round-trips through both.
F = Member("t", "f", 2, FlowControl("partner", 5, 1000, "pool", 2))
NOW = 10_000


def entry(member: Member, deliveries: int = 0) -> dict[str, str]:
    """Returns the fields of a ready-stream entry."""
    return {"m": member.encode(), "d": str(deliveries)}


def state(
    *,
    due: Mapping[Member, float] | None = None,
    ready: Sequence[Mapping[str, str]] = (),
    pending: Sequence[tuple[Member, str, int]] = (),
    inflight: Mapping[Member, float] | None = None,
    wake: int = 0,
    dead: Sequence[Mapping[str, str]] = (),
) -> dict[str, Any]:
    """Builds the expected state of a shard in the shape RedisBackend.state() reads; unnamed keys empty."""
    return {
        "due": {m.encode(): s for m, s in (due or {}).items()},
        "ready": [dict(fields) for fields in ready],
        "pending": [(m.encode(), consumer, count) for m, consumer, count in pending],
        "inflight": {m.encode(): s for m, s in (inflight or {}).items()},
        "wake": wake,
        "dead": [dict(fields) for fields in dead],
    }
