"""QueueStore (version-conditional writes) and QueueGate (settings, admission, park, unpark, figures)
contracts: each fake against its adapter (moto, a real redis-server)."""

from __future__ import annotations

import pytest

from hookline.domain.delivery import StreamEntry
from hookline.domain.errors import Conflict, QueueNotFound
from hookline.domain.models import FlowControl, Member
from hookline.domain.queues import Admission, Queue, QueueFigures, QueueVerdict
from tests.contract.conftest import DynamoBackend, RedisBackend

NOW_MS = 1_000_000
LEASE_MS = NOW_MS + 60_000


def test_given_queue_when_put_replaced_listed_and_deleted_then_versions_are_enforced(
    dynamo_backend: DynamoBackend,
) -> None:
    store, tenant = dynamo_backend.queues, dynamo_backend.tenant
    first = Queue(
        tenant, "mail", rate_limit=5, rate_period_ms=1_000, max_attempts=3, created_ms=1, updated_ms=1
    )
    second = Queue(
        tenant, "mail", max_concurrency=2, paused_since_ms=9, version=2, created_ms=1, updated_ms=2
    )

    store.put(first, None)
    store.put(Queue(tenant, "alpha"), None)
    store.put(second, 1)

    assert store.get(tenant, "mail") == second
    with pytest.raises(Conflict):
        store.put(first, 1)
    with pytest.raises(QueueNotFound):
        store.put(Queue(tenant, "none"), 1)
    assert [q.name for q in store.list_all(tenant)] == ["alpha", "mail"]
    assert store.delete(tenant, "mail") == second
    with pytest.raises(QueueNotFound):
        store.get(tenant, "mail")
    with pytest.raises(QueueNotFound):
        store.delete(tenant, "mail")


def _pending(backend: RedisBackend, *job_ids: str) -> list[StreamEntry]:
    """Adds one ready entry per job of queue mail in shard 0 and reads them as the executor."""
    executor = backend.executor
    executor.ensure_group(0)
    for job_id in job_ids:
        executor.index(Member("t", job_id, 1, FlowControl(queue="mail")), 0, NOW_MS, NOW_MS, new_member=True)
    return executor.read_ready([0], len(job_ids), 0)


def test_given_settings_when_admitting_then_unknown_paused_and_limits_agree(
    redis_backend: RedisBackend,
) -> None:
    gate = redis_backend.executor
    a, b = _pending(redis_backend, "a", "b")

    unknown = gate.admit("t", "mail", a, NOW_MS, LEASE_MS)
    gate.write_settings(Queue("t", "mail", max_concurrency=1, paused_since_ms=5))
    paused = gate.admit("t", "mail", a, NOW_MS, LEASE_MS)
    gate.write_settings(Queue("t", "mail", max_concurrency=1, rate_limit=1, rate_period_ms=1_000))
    first = gate.admit("t", "mail", a, NOW_MS, LEASE_MS)
    second = gate.admit("t", "mail", b, NOW_MS, LEASE_MS)
    figures = gate.figures(Queue("t", "mail", rate_limit=1, rate_period_ms=1_000), 2, NOW_MS)
    gate.forget_settings("t", "mail")

    assert (unknown, paused, first) == (
        QueueVerdict(Admission.UNKNOWN),
        QueueVerdict(Admission.PAUSED, 5),
        QueueVerdict(Admission.ADMITTED, took_slot=True),
    )
    assert second.admission is Admission.REFUSED and second.retry_at_ms > NOW_MS
    assert figures == QueueFigures(parked=0, waiting_for_turn=1, in_flight=1, in_window=1)
    assert gate.admit("t", "mail", b, NOW_MS, LEASE_MS) == QueueVerdict(Admission.UNKNOWN)


def test_given_pending_entries_when_parked_and_unparked_then_ready_again_and_unlisted(
    redis_backend: RedisBackend,
) -> None:
    gate = redis_backend.executor
    a, b = _pending(redis_backend, "a", "b")

    parked = [
        gate.park(a, "mail", NOW_MS),
        gate.park(b, "mail", NOW_MS + 1),
        gate.park(a, "mail", NOW_MS + 2),
    ]
    listed = gate.parked_queues(0)
    figures = gate.figures(Queue("t", "mail"), 2, NOW_MS)
    state_parked = redis_backend.state()
    first = gate.unpark(0, "t", "mail", NOW_MS + 5, 1)
    second = gate.unpark(0, "t", "mail", NOW_MS + 6, 10)

    assert parked == [True, True, False]
    assert listed == [("t", "mail")]
    assert figures.parked == 2
    assert (state_parked["ready"], state_parked["inflight"]) == ([], {})
    assert (first, second) == ((1, 1), (1, 0))
    assert [fields["m"] for fields in redis_backend.state()["ready"]] == [
        a.member.encode(),
        b.member.encode(),
    ]
    assert gate.parked_queues(0) == []
