"""The jobs and executions tables: every state change is a conditional write on (status, generation)."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from hookline.adapters.dynamo import codec, paging, tables
from hookline.adapters.dynamo.transactions import CONDITION_FAILED, Transactions
from hookline.domain import constants
from hookline.domain.delivery import Claim, Finish
from hookline.domain.errors import DependencyDown, IdempotencyConflict, NotFound, NotYet, StaleState
from hookline.domain.models import Execution, Job, JobStatus, Member
from hookline.domain.reconcile import LiveJob

# Named conditions. Attribute names always go through ExpressionAttributeNames (`status` is reserved).
ITEM_IS_NEW = "attribute_not_exists(#pk)"
MARKER_IS_FREE = "attribute_not_exists(#pk) OR #expires < :now_s"
# A delivery may start when the job waits in this generation and is due (an entry that arrives early, e.g.
# indexed by a stale executor, must not fire before the time DynamoDB holds), or when the attempt holding it
# let its lease expire (the executor crashed or hung); executors and the reaper re-deliver such entries.
CLAIMABLE = (
    "#generation = :generation AND ((#status = :scheduled AND #due <= :now_ms) "
    "OR (#status = :running AND #lease < :now_ms))"
)
HELD_BY_ATTEMPT = "#status = :running AND #generation = :generation AND #attempt = :attempt"
# Deliveries ran out: dead-letter a job that waits in this generation, or whose attempt let its lease expire.
# An attempt still inside its lease is running (a slow callback whose idle entry the reaper kept taking):
# it records its own outcome, so the reaper must not kill it.
DEAD_LETTERABLE = (
    "#generation = :generation AND (#status = :scheduled OR (#status = :running AND #lease < :now_ms))"
)
CANCELLABLE = "#status = :scheduled"
# Only a dead job is replayed: a live one would then run twice, a succeeded one again.
REPLAYABLE = "#status = :dead"

# A job listing reads this many items per round of queries (split over the buckets) when filtering by
# status, and at most LIST_MAX_READ_ITEMS per call (about 1 MB of reads), so a sparse filter cannot make one
# request scan a whole tenant.
LIST_FILTERED_BATCH = 200
LIST_MAX_READ_ITEMS = 1000

_NAMES = {
    "#pk": tables.JOBS_PK,
    "#status": "status",
    "#generation": "generation",
    "#attempt": "attempt",
    "#lease": "lease_expires_at_ms",
    "#timeout": "timeout_ms",
    "#base": "attempt_base",
    "#expires": tables.TTL_ATTRIBUTE,
    "#updated": "updated_ms",
    "#due": "due_ms",
    "#live_pk": tables.LIVE_PK,
    "#live_sk": tables.LIVE_SK,
    "#code": "last_status_code",
    "#error": "last_error",
    "#sk": tables.JOBS_SK,
}


def _names(*expressions: str) -> dict[str, str]:
    return codec.attribute_names(_NAMES, *expressions)


def _refusal(error: ClientError, job_id: str, rule: str) -> NotFound | StaleState:
    """Turns a failed condition on an existing-job update into NotFound or StaleState naming the status."""
    response: dict[str, Any] = dict(error.response)
    if "Item" not in response:
        return NotFound(f"job {job_id} not found")
    return StaleState(f"job {job_id} is {codec.item_to_job(response['Item']).status.value}; {rule}")


def _claim_refusal(error: ClientError, member: Member, now_ms: int) -> NotYet | StaleState:
    """Tells a claim that must wait (due later, or the lease still held) from one that may never succeed."""
    response: dict[str, Any] = dict(error.response)
    if "Item" not in response:
        return StaleState(f"job {member.job_id} does not exist")
    job = codec.item_to_job(response["Item"])
    if job.generation == member.generation:
        if job.status is JobStatus.SCHEDULED and job.due_ms > now_ms:
            return NotYet(f"job {member.job_id} is due at {job.due_ms}", job.due_ms)
        if job.status is JobStatus.RUNNING and job.lease_expires_at_ms is not None:
            # Still held: the holder may be alive (its entry re-delivered while it ran, or a copy indexed
            # again); try once the lease has run out, when a take-over is allowed if it was not renewed.
            return NotYet(
                f"job {member.job_id} is held until {job.lease_expires_at_ms}", job.lease_expires_at_ms + 1
            )
    return StaleState(
        f"job {member.job_id} generation {member.generation} is not claimable ({job.status.value}, "
        f"generation {job.generation})"
    )


class DynamoJobStore:
    """Reads and writes jobs, idempotency markers and execution records."""

    def __init__(
        self,
        client: Any,
        jobs_table: str,
        executions_table: str,
        lease_ms: int = constants.LEASE_MS,
        transactions: Transactions | None = None,
        keyspace: tables.Keyspace | None = None,
    ) -> None:
        self._client = client
        self._keyspace = keyspace or tables.Keyspace()
        self._jobs = jobs_table
        self._executions = executions_table
        self._lease_ms = lease_ms
        self._transactions = transactions or Transactions(client)

    def _key(self, tenant: str, job_id: str) -> codec.Item:
        return codec.job_key(self._keyspace, tenant, job_id)

    def create(self, job: Job, request_hash: str, now_ms: int) -> tuple[Job, bool]:
        """Stores a new job; with an idempotency key, returns the earlier job of the same request instead.

        Returns (job, created). Raises IdempotencyConflict when the key was used with a different request.
        """
        job_put = {
            "TableName": self._jobs,
            "Item": codec.job_to_item(job, self._keyspace),
            "ConditionExpression": ITEM_IS_NEW,
            "ExpressionAttributeNames": _names(ITEM_IS_NEW),
        }
        if job.idempotency_key is None:
            self._client.put_item(**job_put)
            return job, True
        marker = codec.to_attribute_values(
            {
                tables.JOBS_PK: self._keyspace.marker_pk(job.tenant, job.idempotency_key),
                tables.JOBS_SK: tables.idempotency_sk(job.idempotency_key),
                "job_id": job.job_id,
                "request_hash": request_hash,
                tables.TTL_ATTRIBUTE: now_ms // 1000 + constants.IDEMPOTENCY_RETENTION_S,
            }
        )
        marker_put = {
            "TableName": self._jobs,
            "Item": marker,
            "ConditionExpression": MARKER_IS_FREE,
            "ExpressionAttributeNames": _names(MARKER_IS_FREE),
            "ExpressionAttributeValues": codec.to_attribute_values({":now_s": now_ms // 1000}),
        }
        # Only a failed condition means the key was taken; a throttled or conflicting transaction is retried
        # and then answered as a dependency failure (503), never as a conflict the client cannot fix.
        if self._transactions.write([{"Put": job_put}, {"Put": marker_put}]) is not None:
            return self._earlier_job(job.tenant, job.idempotency_key, request_hash), False
        return job, True

    def _earlier_job(self, tenant: str, idempotency_key: str, request_hash: str) -> Job:
        reply = self._client.get_item(
            TableName=self._jobs,
            Key=codec.to_attribute_values(
                {
                    tables.JOBS_PK: self._keyspace.marker_pk(tenant, idempotency_key),
                    tables.JOBS_SK: tables.idempotency_sk(idempotency_key),
                }
            ),
            ConsistentRead=True,
        )
        if "Item" not in reply:
            # The marker lost a race with its own expiry; the caller may simply retry.
            raise StaleState("idempotency marker changed concurrently; retry the request")
        marker = codec.from_attribute_values(reply["Item"])
        if marker["request_hash"] != request_hash:
            raise IdempotencyConflict("idempotency_key was already used with a different request")
        return self.get(tenant, marker["job_id"])

    def get(self, tenant: str, job_id: str) -> Job:
        """Returns the tenant's job; raises NotFound (also for another tenant's id)."""
        reply = self._client.get_item(
            TableName=self._jobs, Key=self._key(tenant, job_id), ConsistentRead=True
        )
        if "Item" not in reply:
            raise NotFound(f"job {job_id} not found")
        return codec.item_to_job(reply["Item"])

    def claim(self, member: Member, now_ms: int) -> Claim:
        """Marks the job running for one more attempt under a short lease.

        The lease lasts lease_ms whatever the job's timeout: the executor's heartbeat renews it while the
        attempt runs (renew_lease), so the job of an executor that died is free again soon.

        Raises:
            NotYet: The job is due later, or another attempt still holds its lease; retry_at_ms says when.
            StaleState: The job may never run for this member (another generation, finished, cancelled).
        """
        lease_ms = now_ms + self._lease_ms
        update = (
            "SET #status = :running, #attempt = #attempt + :one, #lease = :lease, #live_sk = :lease, "
            "#updated = :now_ms"
        )
        try:
            reply = self._client.update_item(
                TableName=self._jobs,
                Key=self._key(member.tenant, member.job_id),
                UpdateExpression=update,
                ConditionExpression=CLAIMABLE,
                ExpressionAttributeNames=_names(update, CLAIMABLE),
                ExpressionAttributeValues=codec.to_attribute_values(
                    {
                        ":running": JobStatus.RUNNING.value,
                        ":scheduled": JobStatus.SCHEDULED.value,
                        ":one": 1,
                        ":lease": lease_ms,
                        ":now_ms": now_ms,
                        ":generation": member.generation,
                    }
                ),
                ReturnValues="ALL_OLD",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if codec.error_code(error) == "ConditionalCheckFailedException":
                raise _claim_refusal(error, member, now_ms) from error
            raise
        if "Attributes" not in reply:
            raise StaleState(f"job {member.job_id} does not exist")
        before = codec.item_to_job(reply["Attributes"])
        job = before.with_changes(
            status=JobStatus.RUNNING,
            attempt=before.attempt + 1,
            lease_expires_at_ms=lease_ms,
            updated_ms=now_ms,
        )
        if before.status is JobStatus.RUNNING:
            return Claim(job, before.attempt, before.updated_ms)
        return Claim(job)

    def renew_lease(self, job: Job, lease_expires_at_ms: int, timeout_ms: int | None = None) -> None:
        """Extends the lease of the attempt that holds job; StaleState when that attempt lost it.

        Leaves updated_ms alone: it says when the attempt was claimed, which a take-over records. timeout_ms
        bounds the call, retries included (the JSON client's timeout_s; a boto3 client cannot take it).
        """
        update = "SET #lease = :lease, #live_sk = :lease"
        bound: dict[str, float] = {} if timeout_ms is None else {"timeout_s": timeout_ms / 1000}
        try:
            self._client.update_item(
                **bound,
                TableName=self._jobs,
                Key=self._key(job.tenant, job.job_id),
                UpdateExpression=update,
                ConditionExpression=HELD_BY_ATTEMPT,
                ExpressionAttributeNames=_names(update, HELD_BY_ATTEMPT),
                ExpressionAttributeValues=codec.to_attribute_values(
                    {
                        ":lease": lease_expires_at_ms,
                        ":running": JobStatus.RUNNING.value,
                        ":generation": job.generation,
                        ":attempt": job.attempt,
                    }
                ),
            )
        except ClientError as error:
            if codec.error_code(error) == "ConditionalCheckFailedException":
                raise StaleState(f"job {job.job_id} attempt {job.attempt} no longer holds the job") from error
            raise

    def finish(self, job: Job, finish: Finish, executions: list[Execution], now_ms: int) -> None:
        """Records the attempts and the next state in one transaction.

        Raises:
            StaleState: The attempt no longer holds the job (the condition on the job item failed).
            DependencyDown: DynamoDB kept cancelling the transaction for a transient reason; nothing was
                written, and the caller must not take that for a lost lease.
        """
        values: dict[str, Any] = {
            ":status": finish.status.value,
            ":now_ms": now_ms,
            ":running": JobStatus.RUNNING.value,
            ":generation": job.generation,
            ":attempt": job.attempt,
        }
        sets = ["#status = :status", "#updated = :now_ms"]
        removes = ["#lease"]
        for placeholder, value, name in (
            (":code", finish.status_code, "#code"),
            (":error", finish.error, "#error"),
        ):
            if value is None:
                removes.append(name)
            else:
                sets.append(f"{name} = {placeholder}")
                values[placeholder] = value
        if finish.status is JobStatus.SCHEDULED:
            assert finish.next_due_ms is not None
            sets += ["#generation = :next_generation", "#due = :due", "#live_sk = :due"]
            values.update({":next_generation": job.generation + 1, ":due": finish.next_due_ms})
        else:
            sets.append("#expires = :expires")
            values[":expires"] = now_ms // 1000 + constants.TERMINAL_JOB_RETENTION_S
            removes += ["#live_pk", "#live_sk"]
        expression = f"SET {', '.join(sets)} REMOVE {', '.join(removes)}"
        update = {
            "TableName": self._jobs,
            "Key": self._key(job.tenant, job.job_id),
            "UpdateExpression": expression,
            "ConditionExpression": HELD_BY_ATTEMPT,
            "ExpressionAttributeNames": _names(expression, HELD_BY_ATTEMPT),
            "ExpressionAttributeValues": codec.to_attribute_values(values),
        }
        puts = [
            {"Put": {"TableName": self._executions, "Item": codec.execution_to_item(e)}} for e in executions
        ]
        reasons = self._transactions.write([*puts, {"Update": update}])
        if reasons is not None and reasons[len(puts)] == CONDITION_FAILED:
            raise StaleState(f"job {job.job_id} attempt {job.attempt} no longer holds the job")
        if reasons is not None:
            # Execution records carry no condition, so this cannot happen; never read it as a lost lease.
            raise DependencyDown(f"job {job.job_id}: transaction cancelled for {reasons}")

    def mark_dead(self, member: Member, reason: str, now_ms: int) -> None:
        """Dead-letters a job of the member's generation whose deliveries ran out; StaleState otherwise.

        Only a scheduled job, or a running one whose attempt's lease has expired, is dead-lettered.
        """
        update = (
            "SET #status = :dead, #error = :error, #updated = :now_ms, #expires = :expires "
            "REMOVE #lease, #live_pk, #live_sk"
        )
        try:
            self._client.update_item(
                TableName=self._jobs,
                Key=self._key(member.tenant, member.job_id),
                UpdateExpression=update,
                ConditionExpression=DEAD_LETTERABLE,
                ExpressionAttributeNames=_names(update, DEAD_LETTERABLE),
                ExpressionAttributeValues=codec.to_attribute_values(
                    {
                        ":dead": JobStatus.DEAD.value,
                        ":error": reason,
                        ":now_ms": now_ms,
                        ":expires": now_ms // 1000 + constants.TERMINAL_JOB_RETENTION_S,
                        ":generation": member.generation,
                        ":scheduled": JobStatus.SCHEDULED.value,
                        ":running": JobStatus.RUNNING.value,
                    }
                ),
            )
        except ClientError as error:
            if codec.error_code(error) == "ConditionalCheckFailedException":
                raise StaleState(
                    f"job {member.job_id} is no longer live in generation {member.generation}, "
                    "or an attempt still holds its lease"
                ) from error
            raise

    def cancel(self, tenant: str, job_id: str, now_ms: int) -> Job:
        """Cancels a job that has not started; returns it as it was. Raises NotFound or StaleState."""
        return self._transition(
            tenant,
            job_id,
            "SET #status = :cancelled, #updated = :now_ms, #expires = :expires REMOVE #live_pk, #live_sk",
            CANCELLABLE,
            {
                ":cancelled": JobStatus.CANCELLED.value,
                ":scheduled": JobStatus.SCHEDULED.value,
                ":now_ms": now_ms,
                ":expires": now_ms // 1000 + constants.TERMINAL_JOB_RETENTION_S,
            },
            returns="ALL_OLD",
            rule="only a scheduled job can be cancelled",
        )

    def _transition(
        self,
        tenant: str,
        job_id: str,
        update: str,
        condition: str,
        values: dict[str, Any],
        returns: str,
        rule: str,
    ) -> Job:
        """Applies an API-driven state change to an existing job; NotFound or StaleState (naming rule)."""
        condition = f"attribute_exists(#pk) AND {condition}"
        try:
            reply = self._client.update_item(
                TableName=self._jobs,
                Key=self._key(tenant, job_id),
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeNames=_names(update, condition),
                ExpressionAttributeValues=codec.to_attribute_values(values),
                ReturnValues=returns,
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if codec.error_code(error) != "ConditionalCheckFailedException":
                raise
            raise _refusal(error, job_id, rule) from error
        return codec.item_to_job(reply["Attributes"])

    def live_jobs(
        self, shard: int, cursor: str | None, limit: int, due_before_ms: int | None = None
    ) -> tuple[list[LiveJob], str | None]:
        """Returns a page of the shard's live jobs (sparse GSI) and the cursor to go on from (None: done).

        A shard's live jobs spread over one GSI partition per bucket ("<shard>#<bucket>"); each page reads
        every partition not yet at its end (paging.scan_partitions), each in live_due_ms order: the due time
        of a waiting job, the lease expiry of a running one. due_before_ms keeps only those that can be
        overdue by then. The GSI projects only what reconciliation reads (tables.LIVE_JOB_ATTRIBUTES), never
        a body. The cursor is JSON holding each partition's last key, so a caller may keep it between
        invocations.
        """

        def fetch(partition: str, start_key: Any, page: int) -> tuple[list[LiveJob], Any]:
            items, last_key = codec.live_index_page(
                self._client, self._jobs, partition, start_key, page, sort_at_most=due_before_ms
            )
            return [codec.item_to_live_job(item) for item in items], last_key

        return paging.scan_partitions(self._keyspace.live_pks(shard), fetch, cursor, limit)

    def executions(self, tenant: str, job_id: str) -> list[Execution]:
        """Returns every recorded attempt of a job, oldest first."""
        items: list[Any] = []
        request: dict[str, Any] = {
            "TableName": self._executions,
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": tables.EXECUTIONS_PK},
            "ExpressionAttributeValues": codec.to_attribute_values(
                {":pk": tables.execution_pk(tenant, job_id)}
            ),
            "ConsistentRead": True,
        }
        while True:
            reply = self._client.query(**request)
            items += reply.get("Items", [])
            if "LastEvaluatedKey" not in reply:
                break
            request["ExclusiveStartKey"] = reply["LastEvaluatedKey"]
        return [codec.item_to_execution(tenant, item) for item in items]

    def list_jobs(
        self,
        tenant: str,
        status: JobStatus | None,
        after_job_id: str | None,
        limit: int,
        max_read: int = LIST_MAX_READ_ITEMS,
        filtered_batch: int = LIST_FILTERED_BATCH,
    ) -> tuple[list[Job], str | None]:
        """Returns up to `limit` of the tenant's jobs, newest first, and the job id to go on after (or None).

        The tenant's jobs spread over its buckets; every bucket is queried after the position and the pages
        merged by id (paging.merge_newest_first), so the position stays one job id. A status filter is
        applied after the read (the table has no status index), so one call reads at most `max_read` items:
        a sparse status can yield a short page that still has a continuation.
        """
        expressions = ["#pk = :pk AND begins_with(#sk, :prefix)"]
        if status is not None:
            expressions.append("#status = :status")

        def fetch(bucket: int, after: str | None, page: int) -> paging.BucketPage[Job]:
            pk = tables.bucket_pk(tenant, bucket)
            request: dict[str, Any] = {
                "TableName": self._jobs,
                "KeyConditionExpression": expressions[0],
                "ScanIndexForward": False,
                "Limit": page,
                "ExpressionAttributeNames": _names(*expressions),
            }
            values: dict[str, Any] = {":pk": pk, ":prefix": tables.JOB_SK_PREFIX}
            if status is not None:
                request["FilterExpression"] = expressions[1]
                values[":status"] = status.value
            request["ExpressionAttributeValues"] = codec.to_attribute_values(values)
            if after is not None:
                request["ExclusiveStartKey"] = codec.to_attribute_values(
                    {tables.JOBS_PK: pk, tables.JOBS_SK: tables.job_sk(after)}
                )
            reply = self._client.query(**request)
            last_key = reply.get("LastEvaluatedKey")
            last = None
            if last_key is not None:
                last_sk = str(codec.from_attribute_values(last_key)[tables.JOBS_SK])
                last = last_sk.removeprefix(tables.JOB_SK_PREFIX)
            jobs = [codec.item_to_job(item) for item in reply.get("Items", [])]
            return paging.BucketPage(jobs, last, int(reply.get("ScannedCount", 0)))

        return paging.merge_newest_first(
            self._keyspace.buckets,
            fetch,
            lambda job: job.job_id,
            after_job_id,
            limit,
            None if status is None else max(1, filtered_batch // self._keyspace.buckets),
            max_read,
        )

    def replay(self, tenant: str, job_id: str, shard: int, now_ms: int) -> Job:
        """Turns a dead job into a scheduled one due now: a new generation with a fresh attempt budget.

        The attempt counter keeps counting (the run starts at attempt_base), so the new run's execution
        records never overwrite the old run's.

        The caller passes the job's shard (fixed at creation): its live index partition is shard and bucket.
        Raises NotFound for an unknown (or another tenant's) job and StaleState when it is not dead.
        """
        update = (
            "SET #status = :scheduled, #generation = #generation + :one, #base = #attempt, #due = :now_ms, "
            "#live_pk = :shard, #live_sk = :now_ms, #updated = :now_ms "
            "REMOVE #expires, #lease, #code, #error"
        )
        return self._transition(
            tenant,
            job_id,
            update,
            REPLAYABLE,
            {
                ":scheduled": JobStatus.SCHEDULED.value,
                ":dead": JobStatus.DEAD.value,
                ":one": 1,
                ":now_ms": now_ms,
                ":shard": self._keyspace.live_pk(shard, job_id),
            },
            returns="ALL_NEW",
            rule="only a dead job can be replayed",
        )

    def check(self) -> None:
        """Does one cheap read, so a health check learns whether the jobs table answers."""
        self._client.get_item(TableName=self._jobs, Key=self._key("health#", "check"), ConsistentRead=False)
