"""The whole job lifecycle on a real redis-server, moto's server and a real loopback receiver."""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any

import pytest
import redis
from standardwebhooks import Webhook

from hookline.adapters.redis import keys as redis_keys
from hookline.domain.models import ExecutionOutcome, JobRequest, JobStatus
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container
from hookline.ports import NullMetrics
from hookline.usecases import execute
from hookline.usecases.acker import Acker
from hookline.usecases.promote import Promoter
from tests.support.cluster_audit import key_lookups
from tests.support.receiver import Receiver, Reply
from tests.support.stack import running_loops, wait_until

pytestmark = pytest.mark.integration

TENANT = "acme"


def submit(container: Container, receiver: Receiver, path: str = "/hook", **fields: object) -> str:
    request = JobRequest.model_validate({"url": receiver.url(path), "body": {"path": path}, **fields})
    return container.submitter.submit(TENANT, request).job.job_id


def test_given_delayed_job_when_due_then_fires_within_a_second_and_never_early(
    container: Container, receiver: Receiver
) -> None:
    job_id = submit(container, receiver, delay_s=1.0)
    due_ms = container.jobs.get(TENANT, job_id).due_ms

    with running_loops(container):
        (request,) = receiver.wait_for(1, timeout_s=5)

    assert due_ms <= request.received_ms < due_ms + 1000
    job = container.jobs.get(TENANT, job_id)
    assert (job.status, job.attempt) == (JobStatus.SUCCEEDED, 1)


def test_given_two_failures_when_retried_then_succeeds_on_third_attempt(
    container: Container, receiver: Receiver
) -> None:
    receiver.script("/flaky", [Reply(500), Reply(503)])
    job_id = submit(container, receiver, "/flaky", min_backoff_s=0.05, max_backoff_s=0.1)

    with running_loops(container):
        receiver.wait_for(3, timeout_s=10)
        wait_until(lambda: container.jobs.get(TENANT, job_id).status is JobStatus.SUCCEEDED, 5)

    job = container.jobs.get(TENANT, job_id)
    assert (job.attempt, job.generation, job.last_status_code) == (3, 3, 200)
    executions = container.jobs.executions(TENANT, job_id)
    assert [(e.attempt, e.outcome, e.status_code) for e in executions] == [
        (1, ExecutionOutcome.RETRYABLE, 500),
        (2, ExecutionOutcome.RETRYABLE, 503),
        (3, ExecutionOutcome.SUCCEEDED, 200),
    ]
    assert [r.headers["hookline-attempt"] for r in receiver.requests] == ["1", "2", "3"]
    assert {r.headers["webhook-id"] for r in receiver.requests} == {job_id}


def test_given_always_failing_receiver_when_attempts_run_out_then_dead(
    container: Container, receiver: Receiver
) -> None:
    receiver.script("/down", [Reply(500)] * 3)
    job_id = submit(container, receiver, "/down", max_attempts=3, min_backoff_s=0.05, max_backoff_s=0.1)

    with running_loops(container):
        wait_until(lambda: container.jobs.get(TENANT, job_id).status is JobStatus.DEAD, 10)

    assert len(receiver.requests) == 3
    job = container.jobs.get(TENANT, job_id)
    assert job.attempt == 3
    dead = container.redis.xrange(redis_keys.dead_stream(job.shard))
    assert [fields[b"m"].decode().split("/")[1] for _, fields in dead] == [job_id]
    assert container.redis.zcard(redis_keys.due_key(job.shard)) == 0
    assert container.redis.zcard(redis_keys.inflight_key(job.shard)) == 0


def test_given_404_when_delivered_then_dead_at_once(container: Container, receiver: Receiver) -> None:
    receiver.script("/gone", [Reply(404)])
    job_id = submit(container, receiver, "/gone", max_attempts=5)

    with running_loops(container):
        wait_until(lambda: container.jobs.get(TENANT, job_id).status is JobStatus.DEAD, 5)

    job = container.jobs.get(TENANT, job_id)
    assert (job.attempt, job.last_status_code, len(receiver.requests)) == (1, 404, 1)
    assert [e.outcome for e in container.jobs.executions(TENANT, job_id)] == [ExecutionOutcome.PERMANENT]


def test_given_every_callback_when_received_then_signature_verifies(
    container: Container, receiver: Receiver
) -> None:
    job_ids = {submit(container, receiver, f"/signed/{i}") for i in range(5)}

    with running_loops(container):
        requests = receiver.wait_for(5, timeout_s=5)

    secrets = container.keys.get_signing_secrets(TENANT)
    assert secrets is not None
    verifier = Webhook(secrets.current)
    for request in requests:
        payload = verifier.verify(request.body, request.headers)
        assert payload == {"path": request.path}
    assert {r.headers["webhook-id"] for r in requests} == job_ids


def test_given_promoter_asleep_until_a_far_job_when_a_sooner_one_is_submitted_then_it_is_promoted_on_time(
    container: Container, receiver: Receiver
) -> None:
    # A promoter that would otherwise sleep 10 s: only the submit's wake token (on whichever shard the
    # job hashed to; one waiter per shard) can get the sooner job promoted on time.
    submit(container, receiver, "/far", delay_s=20)
    promoter = Promoter(
        container.index, container.clock, container.shards, NullMetrics(), max_sleep_ms=10_000
    )
    runner = threading.Thread(target=promoter.run, args=(container.clock.now_ms() + 1_500,))
    runner.start()
    time.sleep(0.3)  # the promoter is asleep by now

    soon = container.jobs.get(TENANT, submit(container, receiver, "/soon", delay_s=0.4))
    runner.join(timeout=10)

    promoted_ms = container.redis.zscore(redis_keys.inflight_key(soon.shard), soon.member().encode())
    assert promoted_ms is not None
    assert soon.due_ms <= promoted_ms <= soon.due_ms + 100


def test_given_backlog_on_four_shards_when_executing_then_entries_held_never_exceed_the_concurrency(
    settings: Settings, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Four shards even on one node: XREADGROUP's COUNT applies per stream, so one read over four streams
    # took up to 4 x the free slots, entries that then sat pending, unbeaten, behind the busy pool.
    # Held: attempts running (at most the concurrency) and finished entries whose acknowledgement the acker
    # has not sent yet (usecases/acker.py), at most its queued count read after the sample minus its sent
    # count read before it.
    ackers: list[Acker] = []

    class WatchedAcker(Acker):
        """The executor's acker, kept where the test can read its queued and sent counts."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            ackers.append(self)

    monkeypatch.setattr(execute, "Acker", WatchedAcker)
    container = Container(dataclasses.replace(settings, shards=4), consumer="bounded-executor")
    concurrency = container.settings.executor_concurrency
    receiver.script("/slow", [Reply(200, delay_s=0.05)] * (3 * concurrency))
    job_ids = [submit(container, receiver, "/slow") for _ in range(3 * concurrency)]
    assert len({container.jobs.get(TENANT, j).shard for j in job_ids}) > 1
    held: list[int] = []  # held now, less the acknowledgements queued and unsent at that moment at most
    lookups = key_lookups(container.redis)
    container.executor  # noqa: B018 (built now, with its acker)
    [acker] = ackers
    try:
        with running_loops(container):
            while len(receiver.requests) < len(job_ids):
                sent_before = acker.sent
                held_sample = held_now(container)
                held.append(held_sample - (acker.queued - sent_before))
                time.sleep(0.005)
            wait_until(lambda: all(ok(container, j) for j in job_ids), 10)
        # The cluster client asked a node (its default one) for the keys of every XREADGROUP: a second
        # round trip per read, all on one node. The engine's client finds them itself.
        assert key_lookups(container.redis) == lookups
    finally:
        container.close()

    assert max(held) <= concurrency
    assert max(held) > 0


# Counts the entries of every given ready stream that one consumer holds, in one script: atomically, as a
# sum of one XPENDING a stream read shard by shard is not (an entry acknowledged on a shard already counted
# and its slot's next entry read on a shard counted later would be counted twice).
HELD_SCRIPT = """
local held = 0
for _, stream in ipairs(KEYS) do
  if redis.call('EXISTS', stream) == 1 then
    for _, row in ipairs(redis.call('XPENDING', stream, ARGV[1], '-', '+', 1000, ARGV[2])) do
      held = held + 1
    end
  end
end
return held
"""


def held_now(container: Container) -> int:
    """Returns how many ready entries the container's consumer holds over all its shards, at one instant.

    On one Redis node that is one script over every shard's stream. A Redis Cluster cannot run a script
    over keys of several slots, and a sum of counts read one after another overstates (see HELD_SCRIPT):
    by as many entries as one batch of acknowledgements frees, since their slots go to reads on other
    shards at once. There the most any one shard holds is returned, a weaker check (each read's COUNT at
    most the free slots), the whole bound being checked by the single-node run.
    """
    if isinstance(container.redis, redis.Redis):
        streams = [redis_keys.ready_stream(shard) for shard in container.shards]
        script = container.redis.register_script(HELD_SCRIPT)
        return int(script(keys=streams, args=[redis_keys.CONSUMER_GROUP, container.consumer]))
    return max(pending_of(container, shard) for shard in container.shards)


def pending_of(container: Container, shard: int) -> int:
    """Returns how many entries of the shard's ready stream the container's consumer holds."""
    stream = redis_keys.ready_stream(shard)
    if not container.redis.exists(stream):
        return 0
    rows = container.redis.xpending_range(
        stream, redis_keys.CONSUMER_GROUP, min="-", max="+", count=1000, consumername=container.consumer
    )
    return len(rows)


def ok(container: Container, job_id: str) -> bool:
    return container.jobs.get(TENANT, job_id).status is JobStatus.SUCCEEDED


def test_given_ready_jobs_on_every_shard_when_the_fan_out_reads_the_backlog_then_it_counts_each(
    container: Container, receiver: Receiver
) -> None:
    # The backlog read is a transaction of two commands on one shard's stream, once per shard: one slot
    # each, which a cluster pipeline allows.
    for shard in container.shards:
        container.index.ensure_group(shard)
    job_ids = [submit(container, receiver, f"/backlog/{i}") for i in range(8)]
    shards = {container.jobs.get(TENANT, j).shard for j in job_ids}

    assert container.fan_out.backlog() == 8
    assert len(shards) > 1 or len(container.shards) == 1
    (entry, *_) = container.index.read_ready([next(iter(shards))], 1, 0)
    assert container.fan_out.backlog() == 7  # read by an executor: no longer waiting for one
    assert entry.member.job_id in job_ids
