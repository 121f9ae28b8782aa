"""The bench's DynamoDB meter counts what the real adapter sends, and prices items by DynamoDB's size rules.

The hookline and hookline-engine-alone rows report DynamoDB requests per job from the meter; if the
adapter changes the requests it sends (a read before a write, a transaction split in two), the meter's
figures go stale. The first test runs one life of a job through the real adapter on moto, recording the
operations botocore sends, and the same calls through the metered fake: the two must agree.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bench.compare.counted_store import DynamoMeter, MeteredJobStore, MeteredKeyStore
from bench.compare.dynamo_units import (
    estimated_index_units,
    estimated_units,
    item_size,
    operations_in_log,
    write_units,
)
from hookline.adapters.dynamo.job_store import DynamoJobStore
from hookline.adapters.dynamo.key_store import DynamoKeyStore
from hookline.domain.delivery import Finish
from hookline.domain.keys import SigningSecrets
from hookline.domain.models import Execution, ExecutionOutcome, Job, JobStatus
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import dynamodb_client
from tests.fakes.jobs import FakeJobStore
from tests.fakes.keys import FakeKeyStore
from tests.support.jobs import scheduled_job

NOW = 1_767_225_600_000


def _job(idempotency_key: str | None = None) -> Job:
    return scheduled_job(NOW, body='{"id": "x", "payload": {"order": 42}}', idempotency_key=idempotency_key)


def _one_life(jobs: Any, keys: Any) -> None:
    """What the engine asks the stores for one job, and the calls around it the bench can meet."""
    job, _ = jobs.create(_job(), "", NOW)
    claim = jobs.claim(job.member(), NOW + 1)
    record = Execution(job.tenant, job.job_id, 1, 1, NOW + 1, NOW + 20, ExecutionOutcome.SUCCEEDED, 19, 200)
    jobs.finish(claim.job, Finish(JobStatus.SUCCEEDED, 200, None), [record], NOW + 20)
    jobs.get(job.tenant, job.job_id)
    jobs.executions(job.tenant, job.job_id)
    jobs.create(_job(idempotency_key="k1"), "hash", NOW)
    dead, _ = jobs.create(_job(), "", NOW)
    jobs.mark_dead(dead.member(), "deliveries_exhausted", NOW + 1)
    jobs.live_jobs(0, None, 10)
    keys.put_signing_secrets("bench", SigningSecrets("whsec_" + "A" * 44), NOW, only_if_missing=True)
    keys.get_signing_secrets("bench")
    keys.get_key("nobody")


@pytest.mark.integration
def test_given_one_life_of_a_job_when_metered_then_the_meter_counts_the_adapter_s_requests(
    settings: Settings,
) -> None:
    client = dynamodb_client(settings, max_connections=2)
    sent: list[str] = []
    client.meta.events.register("before-call.dynamodb.*", lambda model, **_: sent.append(model.name))
    meter = DynamoMeter()
    try:
        real_jobs = DynamoJobStore(client, settings.jobs_table, settings.executions_table)
        _one_life(real_jobs, DynamoKeyStore(client, settings.api_keys_table))
    finally:
        client.close()
    _one_life(MeteredJobStore(FakeJobStore(), meter), MeteredKeyStore(FakeKeyStore(), meter))

    assert Counter(sent) == meter.requests
    assert meter.wru > 0 and meter.rru > 0


def test_given_items_when_sized_then_names_and_values_count_as_dynamodb_counts_them() -> None:
    # "pk" (2) + "abc" (3); "n" (1) + 12345 (5 significant digits: 3 + 1); "ok" (2) + a boolean (1);
    # "m" (1) + a map: 3 + ("a" (1) + "xy" (2) + 1).
    item = {"pk": {"S": "abc"}, "n": {"N": "12345"}, "ok": {"BOOL": True}, "m": {"M": {"a": {"S": "xy"}}}}

    assert item_size(item) == 5 + 5 + 3 + 8
    assert item_size({"s": {"S": "é"}}) == 1 + 2  # UTF-8 bytes, not characters
    assert [write_units(0), write_units(1024), write_units(1025), write_units(1025, True)] == [1, 1, 2, 4]


def test_given_the_dev_moto_server_s_log_when_read_then_requests_are_counted_by_operation(
    tmp_path: Path,
) -> None:
    # The lines as hookline_local.serial_http writes them (tests/unit/dev/test_serial_http.py).
    log = tmp_path / "moto.log"
    log.write_text(
        "\n".join(
            [
                '127.0.0.1 - - [03/Dec/2026 10:00:00] "POST / HTTP/1.1" 200 - DynamoDB_20120810.PutItem',
                '127.0.0.1 - - [03/Dec/2026 10:00:00] "POST / HTTP/1.1" 400 - DynamoDB_20120810.UpdateItem',
                '127.0.0.1 - - [03/Dec/2026 10:00:00] "POST / HTTP/1.1" 200 - DynamoDB_20120810.PutItem',
                '127.0.0.1 - - [03/Dec/2026 10:00:00] "GET /moto-api/ HTTP/1.1" 200 -',
            ]
        )
    )

    operations = operations_in_log(log)

    assert operations == Counter({"PutItem": 2, "UpdateItem": 1})
    assert operations_in_log(tmp_path / "missing.log") == Counter()
    # Two job writes of a 600-byte job (1 WRU each) and one finish (2 x (job + 1,500-byte execution)).
    assert estimated_units(Counter({"PutItem": 1, "UpdateItem": 1, "TransactWriteItems": 1}), 600, 1500) == (
        1 + 1 + 2 * (1 + 2),
        0.0,
    )


def test_given_a_job_s_life_when_metered_then_the_live_index_units_follow_its_live_keys() -> None:
    meter = DynamoMeter()
    jobs = MeteredJobStore(FakeJobStore(), meter)
    job, _ = jobs.create(_job(), "", NOW)
    claim = jobs.claim(job.member(), NOW + 1)
    record = Execution(job.tenant, job.job_id, 1, 1, NOW + 1, NOW + 20, ExecutionOutcome.SUCCEEDED, 19, 200)
    jobs.finish(claim.job, Finish(JobStatus.SUCCEEDED, 200, None), [record], NOW + 20)

    # Put at the create (1), changed in place by the claim (status and lease are projected, the key stays:
    # 1), removed at the finish (1): docs/capacity.md's 3 index WRU per one-attempt job.
    assert meter.index_wru == 3

    repeat, created = jobs.create(_job(idempotency_key="k"), "h", NOW)
    _, created_again = jobs.create(repeat, "h", NOW)
    assert (created, created_again) == (True, False)
    assert meter.index_wru == 4  # the repeat wrote nothing: no index item


def _retried_life(jobs: MeteredJobStore) -> None:
    """A job whose first attempt fails with a retryable status and whose second succeeds."""
    job, _ = jobs.create(_job(), "", NOW)
    first = jobs.claim(job.member(), NOW + 1).job
    failed = Execution(job.tenant, job.job_id, 1, 1, NOW + 1, NOW + 20, ExecutionOutcome.RETRYABLE, 19, 503)
    jobs.finish(first, Finish(JobStatus.SCHEDULED, 503, "status 503", NOW + 1_000), [failed], NOW + 20)
    second = jobs.claim(first.with_changes(generation=2).member(), NOW + 1_000).job
    done = Execution(
        job.tenant, job.job_id, 2, 2, NOW + 1_000, NOW + 1_020, ExecutionOutcome.SUCCEEDED, 19, 200
    )
    jobs.finish(second, Finish(JobStatus.SUCCEEDED, 200, None), [done], NOW + 1_020)


def test_given_one_attempt_and_a_retried_job_when_metered_then_their_write_units_per_job() -> None:
    """The figures docs/capacity.md gives for a ~200-byte body: table and index write units per job."""
    once = DynamoMeter()
    jobs = MeteredJobStore(FakeJobStore(), once)
    job, _ = jobs.create(_job(), "", NOW)
    claim = jobs.claim(job.member(), NOW + 1)
    record = Execution(job.tenant, job.job_id, 1, 1, NOW + 1, NOW + 20, ExecutionOutcome.SUCCEEDED, 19, 200)
    jobs.finish(claim.job, Finish(JobStatus.SUCCEEDED, 200, None), [record], NOW + 20)
    # create, claim, finish: one WRU each (the finish one UpdateItem: attempt 1's record in the job item)
    assert (once.requests, once.wru, once.index_wru) == (Counter(PutItem=1, UpdateItem=2), 3, 3)

    retried = DynamoMeter()
    _retried_life(MeteredJobStore(FakeJobStore(), retried))
    # the second finish is a transaction (job 2 + the second record 2); the retry moves the index key (2)
    assert retried.requests == Counter(PutItem=1, UpdateItem=3, TransactWriteItems=1)
    assert (retried.wru, retried.index_wru) == (1 + 1 + 1 + 1 + 2 + 2, 1 + 1 + 2 + 1 + 1)


@pytest.mark.integration
def test_given_a_retried_job_when_its_attempts_are_listed_then_the_meter_counts_the_adapter_s_reads(
    settings: Settings,
) -> None:
    """Attempt 1 is read from the job item; the executions table is queried only once there is another."""
    client = dynamodb_client(settings, max_connections=2)
    meter = DynamoMeter()
    try:
        real = DynamoJobStore(client, settings.jobs_table, settings.executions_table)
        _retried_life(real)
        real_id = real.list_jobs("bench", None, None, 1)[0][0].job_id
        sent: list[str] = []
        client.meta.events.register("before-call.dynamodb.*", lambda model, **_: sent.append(model.name))
        listed = real.executions("bench", real_id)
    finally:
        client.close()
    metered = MeteredJobStore(FakeJobStore(), meter)
    _retried_life(metered)
    before = meter.requests
    job_id = metered.list_jobs("bench", None, None, 1)[0][0].job_id
    after_list = meter.requests
    assert [e.attempt for e in metered.executions("bench", job_id)] == [e.attempt for e in listed] == [1, 2]

    assert Counter(sent) == meter.requests - after_list == Counter(GetItem=1, Query=1)
    assert after_list - before == Counter(Query=8)  # one per bucket (the default 8)


def test_given_operations_counted_in_a_log_when_estimated_then_each_job_s_life_costs_three_index_units() -> (
    None
):
    # One-attempt jobs: a PutItem (create) and two UpdateItems (claim, finish) each.
    assert estimated_index_units(Counter({"PutItem": 10, "UpdateItem": 20})) == 30


def test_given_requests_priced_later_when_the_totals_are_read_then_sized_then_and_only_once() -> None:
    meter = DynamoMeter()
    sized: list[str] = []

    def units(name: str, wru: float) -> tuple[float, float]:
        sized.append(name)
        return wru, 0.0

    meter.record_later("PutItem", lambda: units("put", 1.0))
    meter.record_later("TransactWriteItems", lambda: units("finish", 4.0))

    # Counted at once, sized (the meter's own CPU) only when the totals are read, outside the measured run.
    assert (meter.requests, sized) == (Counter({"PutItem": 1, "TransactWriteItems": 1}), [])
    assert meter.snapshot()["dynamodb_wru"] == 5.0
    assert (meter.wru, sized) == (5.0, ["put", "finish"])
