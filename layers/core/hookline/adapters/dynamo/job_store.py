"""The jobs and executions tables: every state change is a conditional write on (status, generation)."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from hookline.adapters.dynamo import codec, paging, tables
from hookline.adapters.dynamo.errors import TRANSIENT_ERROR_CODES
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
# Only a waiting job is moved to now (also one already queued, not yet claimed): a running one holds a lease.
# Fenced on the generation the caller read: the write leaves the status as it was, so without the fence a
# repeat of an applied write (its reply lost) would pass again and move the job a second generation on.
RUNNABLE_NOW = "#status = :scheduled AND #generation = :generation"

# Every conditional write that changes a job (create, claim, finish, cancel, replay) stamps it with a token
# made for that call, and an idempotency marker carries its create's. The clients send a write again when
# its reply was lost (botocore's retries, the JSON client's), and the repeat of a write that was applied
# fails its own condition: a refused write that finds its own token was applied by that first try, and
# reports that success, never someone else's hold, a conflict or a missing job. Each kind of write has its
# own attribute, so that another kind of write cannot overwrite the token before the repeat arrives (a job
# created and, before the create's repeat, indexed by the reaper from DynamoDB and claimed; a retry finished
# and claimed by another executor). A claim also keeps what it took the job from (CLAIMED_FROM_STATUS,
# CLAIMED_FROM_MS), so its repeat can tell a take-over as the first try's reply did.
CREATE_TOKEN = "create_token"
CLAIM_TOKEN = "claim_token"
FINISH_TOKEN = "finish_token"
CHANGE_TOKEN = "change_token"  # cancel and replay
CLAIMED_FROM_STATUS = "claimed_from_status"
CLAIMED_FROM_MS = "claimed_from_ms"

# The error of a write whose condition failed (a transaction's item says CONDITION_FAILED instead).
CONDITION_FAILED_ERROR = "ConditionalCheckFailedException"

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
    "#claim_token": CLAIM_TOKEN,
    "#finish_token": FINISH_TOKEN,
    "#change_token": CHANGE_TOKEN,
    "#claimed_from": CLAIMED_FROM_STATUS,
    "#claimed_ms": CLAIMED_FROM_MS,
    "#first": tables.FIRST_EXECUTION,
}

# The live index's key of a job is (live_shard, live_due_ms = its due time) from the write that makes it
# live (create, a retry's finish, replay) until the job ends: a claim, a take-over and a lease renewal change
# only projected attributes (status, lease_expires_at_ms, updated_ms), one index write each instead of a
# delete and a put. So a running job's live_due_ms is at most its lease's end (items an older version wrote
# hold the lease's end there, and a renewal since then only moved the lease later), and the due scan, which
# reads the index up to a horizon, keeps a running job only when its lease can have ended by then.
RUNNING_JOB_DUE_BY_HORIZON = "NOT (#status = :running AND #lease > :horizon)"


def _names(*expressions: str) -> dict[str, str]:
    return codec.attribute_names(_NAMES, *expressions)


def _update_request(
    table: str, key: codec.Item, update: str, condition: str, values: codec.Item
) -> dict[str, Any]:
    """An UpdateItem request: `update` applied to the item at key only while `condition` holds.

    values are already in attribute-value form; the names are those the two expressions use.
    """
    return {
        "TableName": table,
        "Key": key,
        "UpdateExpression": update,
        "ConditionExpression": condition,
        "ExpressionAttributeNames": _names(update, condition),
        "ExpressionAttributeValues": values,
    }


def new_write_token() -> str:
    """Returns a token for one conditional write (64 random bits); its retries carry the same one."""
    return secrets.token_hex(8)


def _stamped(item: codec.Item | None, attribute: str, token: str) -> bool:
    """Tells whether the token attribute of item is the one the write carrying token left."""
    return item is not None and item.get(attribute) == {"S": token}


@dataclass(frozen=True)
class _Refused:
    """A conditional write DynamoDB refused: its error, and the item its condition found (None: no item)."""

    error: ClientError
    item: codec.Item | None


def _refusal(item: codec.Item | None, job_id: str, rule: str) -> NotFound | StaleState:
    """Turns a failed condition on an existing-job update into NotFound or StaleState naming the status."""
    if item is None:
        return NotFound(f"job {job_id} not found")
    return StaleState(f"job {job_id} is {codec.item_to_job(item).status.value}; {rule}")


def _claim_refusal(item: codec.Item | None, member: Member, now_ms: int) -> NotYet | StaleState:
    """Tells a claim that must wait (due later, or the lease still held) from one that may never succeed."""
    if item is None:
        return StaleState(f"job {member.job_id} does not exist")
    job = codec.item_to_job(item)
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


def _own_claim(item: codec.Item) -> Claim:
    """Returns the Claim a claim's first try made, read from the item it left (its repeat was refused)."""
    job = codec.item_to_job(item)
    values = codec.from_attribute_values(item)
    if values.get(CLAIMED_FROM_STATUS) == JobStatus.RUNNING.value:
        return Claim(job, job.attempt - 1, values[CLAIMED_FROM_MS])
    return Claim(job)


def split_executions(executions: list[Execution]) -> tuple[Execution | None, list[Execution]]:
    """Returns the record of attempt 1 (written into the job item) and the others (executions table items)."""
    first = next((e for e in executions if e.attempt == tables.FIRST_ATTEMPT), None)
    return first, [e for e in executions if e.attempt != tables.FIRST_ATTEMPT]


class DynamoJobStore:
    """Reads and writes jobs, idempotency markers and execution records.

    Its client is the DynamoDB JSON client the wiring builds (json_client.DynamoJsonClient), or any client
    that takes the same calls, a call's budget (timeout_s) included: the store sends every call the same
    way whatever the client, so a test that wraps the client runs the code production runs.
    """

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
        A repeat of this call's own write (its reply was lost, the client sent it again) reports it created.
        """
        token = new_write_token()
        item = {**codec.job_to_item(job, self._keyspace), CREATE_TOKEN: {"S": token}}
        job_put = {
            "TableName": self._jobs,
            "Item": item,
            "ConditionExpression": ITEM_IS_NEW,
            "ExpressionAttributeNames": _names(ITEM_IS_NEW),
        }
        if job.idempotency_key is None:
            put = self._conditional(self._client.put_item, item, job_put)
            # A fresh id is taken only by this call's own first try: anything else is an error.
            if isinstance(put, _Refused) and not _stamped(put.item, CREATE_TOKEN, token):
                raise put.error
            return job, True
        marker = codec.to_attribute_values(
            {
                tables.JOBS_PK: self._keyspace.marker_pk(job.tenant, job.idempotency_key),
                tables.JOBS_SK: tables.idempotency_sk(job.idempotency_key),
                "job_id": job.job_id,
                "request_hash": request_hash,
                tables.TTL_ATTRIBUTE: now_ms // 1000 + constants.IDEMPOTENCY_RETENTION_S,
                CREATE_TOKEN: token,
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
            return self._earlier_job(job.tenant, job.idempotency_key, request_hash, token)
        return job, True

    def _earlier_job(
        self, tenant: str, idempotency_key: str, request_hash: str, token: str
    ) -> tuple[Job, bool]:
        """Returns the job the key's marker names: (job, True) when this call's own first try wrote it."""
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
        return self.get(tenant, marker["job_id"]), marker.get(CREATE_TOKEN) == token

    def _conditional(
        self, send: Callable[..., dict[str, Any]], key: codec.Item, request: dict[str, Any]
    ) -> dict[str, Any] | _Refused:
        """Sends one conditional write; returns its reply, or the refusal with the item the condition found.

        The write asks for that item with the refusal (ReturnValuesOnConditionCheckFailure=ALL_OLD), so a
        refusal usually costs no read (_refused_item). Only a failed condition is a refusal: any other error
        is raised as the client raised it.
        """
        try:
            return send(**request, ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except ClientError as error:
            if codec.error_code(error) != CONDITION_FAILED_ERROR:
                raise
            return _Refused(error, self._refused_item(error, key))

    def _refused_item(self, error: ClientError, key: codec.Item) -> codec.Item | None:
        """Returns the item a refused conditional write found (None: no item).

        That is the refusal's ALL_OLD (ReturnValuesOnConditionCheckFailure); where a client or emulator
        gives none, a consistent read of the key (only key attributes of `key` are used).
        """
        response: dict[str, Any] = dict(error.response)
        if "Item" in response:
            item: codec.Item = response["Item"]
            return item
        return self._found(key)

    def _found(self, key: codec.Item) -> codec.Item | None:
        """Returns the jobs table's item at key, read consistently (None: no item).

        Only the key attributes of `key` are used, so an item may be passed as its own key.
        """
        only_key = {name: key[name] for name in (tables.JOBS_PK, tables.JOBS_SK)}
        found: codec.Item | None = self._client.get_item(
            TableName=self._jobs, Key=only_key, ConsistentRead=True
        ).get("Item")
        return found

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
        token = new_write_token()
        key = self._key(member.tenant, member.job_id)
        # The copies come first: whether SET reads the item as it was or action by action, they read the
        # status and updated_ms the job had before this claim.
        update = (
            "SET #claimed_from = #status, #claimed_ms = #updated, #status = :running, "
            "#attempt = #attempt + :one, #lease = :lease, #updated = :now_ms, "
            "#claim_token = :token"
        )
        values = codec.to_attribute_values(
            {
                ":running": JobStatus.RUNNING.value,
                ":scheduled": JobStatus.SCHEDULED.value,
                ":one": 1,
                ":lease": lease_ms,
                ":now_ms": now_ms,
                ":generation": member.generation,
                ":token": token,
            }
        )
        request = _update_request(self._jobs, key, update, CLAIMABLE, values)
        reply = self._conditional(self._client.update_item, key, {**request, "ReturnValues": "ALL_OLD"})
        if isinstance(reply, _Refused):
            if reply.item is not None and _stamped(reply.item, CLAIM_TOKEN, token):
                # This claim's first try took the job and only its reply was lost: the attempt is ours.
                return _own_claim(reply.item)
            raise _claim_refusal(reply.item, member, now_ms) from reply.error
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

        Leaves updated_ms alone: it says when the attempt was claimed, which a take-over records; and the
        live index's key (RUNNING_JOB_DUE_BY_HORIZON): only the projected lease changes. timeout_ms
        bounds the call, retries included: it goes to the client as the call's timeout_s, which every client
        of this store takes (the JSON client's budget).
        """
        update = "SET #lease = :lease"
        bound: dict[str, float] = {} if timeout_ms is None else {"timeout_s": timeout_ms / 1000}
        try:
            values = codec.to_attribute_values(
                {
                    ":lease": lease_expires_at_ms,
                    ":running": JobStatus.RUNNING.value,
                    ":generation": job.generation,
                    ":attempt": job.attempt,
                }
            )
            key = self._key(job.tenant, job.job_id)
            self._client.update_item(
                **bound, **_update_request(self._jobs, key, update, HELD_BY_ATTEMPT, values)
            )
        except ClientError as error:
            if codec.error_code(error) == CONDITION_FAILED_ERROR:
                raise StaleState(f"job {job.job_id} attempt {job.attempt} no longer holds the job") from error
            raise

    def finish(self, job: Job, finish: Finish, executions: list[Execution], now_ms: int) -> None:
        """Records the attempts and the next state, all or nothing, fenced by HELD_BY_ATTEMPT.

        The record of attempt 1 goes into the job item (tables.FIRST_EXECUTION), every other attempt's into
        the executions table. A finish with no other record (a job's first attempt, the common case) is one
        conditional UpdateItem; with some, a transaction of the job's update and their puts (each item billed
        twice). A repeat of this call's own write (its reply was lost and the client sent it again, and
        DynamoDB did not answer it from the transaction's idempotency token: an UpdateItem, an emulator, or a
        repeat after the token's window) finds the job stamped by it and reports that success.

        Raises:
            StaleState: The attempt no longer holds the job (the condition on the job item failed).
            DependencyDown: DynamoDB kept cancelling the transaction, or refusing the single update, for a
                transient reason; nothing was written, and the caller must not take that for a lost lease.
        """
        token = new_write_token()
        first, later = split_executions(executions)
        key = self._key(job.tenant, job.job_id)
        update = self._finish_update(job, finish, first, now_ms, token)
        if not later:
            self._finish_alone(job, update, token)
            return
        puts = [{"Put": {"TableName": self._executions, "Item": codec.execution_to_item(e)}} for e in later]
        reasons = self._transactions.write([*puts, {"Update": update}])
        if reasons is not None and reasons[len(puts)] == CONDITION_FAILED:
            if _stamped(self._found(key), FINISH_TOKEN, token):
                return  # this call's first try wrote it (the execution records are plain puts: rewritten)
            raise StaleState(f"job {job.job_id} attempt {job.attempt} no longer holds the job")
        if reasons is not None:
            # Execution records carry no condition, so this cannot happen; never read it as a lost lease.
            raise DependencyDown(f"job {job.job_id}: transaction cancelled for {reasons}")

    def _finish_alone(self, job: Job, update: dict[str, Any], token: str) -> None:
        """Sends a finish that writes the job item alone (one UpdateItem), with finish()'s errors.

        A write DynamoDB kept refusing for a transient reason (throttling, a conflicting transaction, a 5xx:
        TRANSIENT_ERROR_CODES, after the client's retries) is DependencyDown, as a transaction's transient
        cancellations are, unless a consistent read finds this call's token (an earlier try whose reply was
        lost was applied): the executor then leaves its entry pending, never takes it for a lost lease.
        """
        key = update["Key"]
        try:
            reply = self._conditional(self._client.update_item, key, update)
        except ClientError as error:
            code = codec.error_code(error)
            if code not in TRANSIENT_ERROR_CODES:
                raise
            try:
                found = self._found(key)
            except ClientError:
                found = None
            if _stamped(found, FINISH_TOKEN, token):
                return
            raise DependencyDown(f"job {job.job_id}: finish refused for {code}; retry later") from error
        # A refusal that finds this call's token is its own first try's write: done.
        if isinstance(reply, _Refused) and not _stamped(reply.item, FINISH_TOKEN, token):
            lost = f"job {job.job_id} attempt {job.attempt} no longer holds the job"
            raise StaleState(lost) from reply.error

    def _finish_update(
        self, job: Job, finish: Finish, first: Execution | None, now_ms: int, token: str
    ) -> dict[str, Any]:
        """Returns the finish's UpdateItem request (HELD_BY_ATTEMPT), with attempt 1's record when given."""
        values: dict[str, Any] = {
            ":status": finish.status.value,
            ":now_ms": now_ms,
            ":running": JobStatus.RUNNING.value,
            ":generation": job.generation,
            ":attempt": job.attempt,
            ":token": token,
        }
        sets = ["#status = :status", "#updated = :now_ms", "#finish_token = :token"]
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
        attribute_values = codec.to_attribute_values(values)
        if first is not None:
            sets.append("#first = :first")
            attribute_values[":first"] = codec.execution_to_map(first)
        expression = f"SET {', '.join(sets)} REMOVE {', '.join(removes)}"
        key = self._key(job.tenant, job.job_id)
        return _update_request(self._jobs, key, expression, HELD_BY_ATTEMPT, attribute_values)

    def mark_dead(self, member: Member, reason: str, now_ms: int) -> None:
        """Dead-letters a job of the member's generation whose deliveries ran out; StaleState otherwise.

        Only a scheduled job, or a running one whose attempt's lease has expired, is dead-lettered. A job
        already dead in the member's generation for the same reason is what this call asks for (its own
        first try whose reply was lost, or an earlier call whose caller failed after it): no error.
        """
        update = (
            "SET #status = :dead, #error = :error, #updated = :now_ms, #expires = :expires "
            "REMOVE #lease, #live_pk, #live_sk"
        )
        key = self._key(member.tenant, member.job_id)
        values = codec.to_attribute_values(
            {
                ":dead": JobStatus.DEAD.value,
                ":error": reason,
                ":now_ms": now_ms,
                ":expires": now_ms // 1000 + constants.TERMINAL_JOB_RETENTION_S,
                ":generation": member.generation,
                ":scheduled": JobStatus.SCHEDULED.value,
                ":running": JobStatus.RUNNING.value,
            }
        )
        request = _update_request(self._jobs, key, update, DEAD_LETTERABLE, values)
        reply = self._conditional(self._client.update_item, key, request)
        if not isinstance(reply, _Refused):
            return
        found = None if reply.item is None else codec.item_to_job(reply.item)
        if (
            found is not None
            and found.status is JobStatus.DEAD
            and found.generation == member.generation
            and found.last_error == reason
        ):
            return
        raise StaleState(
            f"job {member.job_id} is no longer live in generation {member.generation}, "
            "or an attempt still holds its lease"
        ) from reply.error

    def cancel(self, tenant: str, job_id: str, now_ms: int) -> Job:
        """Cancels a job that has not started; returns it cancelled. Raises NotFound or StaleState."""
        return self._transition(
            tenant,
            job_id,
            "SET #status = :cancelled, #updated = :now_ms, #expires = :expires, #change_token = :token "
            "REMOVE #live_pk, #live_sk",
            CANCELLABLE,
            {
                ":cancelled": JobStatus.CANCELLED.value,
                ":scheduled": JobStatus.SCHEDULED.value,
                ":now_ms": now_ms,
                ":expires": now_ms // 1000 + constants.TERMINAL_JOB_RETENTION_S,
            },
            rule="only a scheduled job can be cancelled",
        )

    def _transition(
        self,
        tenant: str,
        job_id: str,
        update: str,
        condition: str,
        values: dict[str, Any],
        rule: str,
    ) -> Job:
        """Applies an API-driven state change to an existing job and returns the job after it.

        The update sets #change_token = :token. NotFound or StaleState (naming rule); a repeat of this call's
        own first try, which was applied, returns the job it left.
        """
        token = new_write_token()
        condition = f"attribute_exists(#pk) AND {condition}"
        key = self._key(tenant, job_id)
        request = _update_request(
            self._jobs, key, update, condition, codec.to_attribute_values({**values, ":token": token})
        )
        reply = self._conditional(self._client.update_item, key, {**request, "ReturnValues": "ALL_NEW"})
        if not isinstance(reply, _Refused):
            return codec.item_to_job(reply["Attributes"])
        if reply.item is not None and _stamped(reply.item, CHANGE_TOKEN, token):
            return codec.item_to_job(reply.item)
        raise _refusal(reply.item, job_id, rule) from reply.error

    def live_jobs(
        self, shard: int, cursor: str | None, limit: int, due_before_ms: int | None = None
    ) -> tuple[list[LiveJob], str | None]:
        """Returns a page of the shard's live jobs (sparse GSI) and the cursor to go on from (None: done).

        A shard's live jobs spread over one GSI partition per bucket ("<shard>#<bucket>"); each page reads
        every partition not yet at its end (paging.scan_partitions), each in live_due_ms order: the due time
        (a running job keeps the one it was claimed at; RUNNING_JOB_DUE_BY_HORIZON). due_before_ms keeps only
        those that can be overdue by then: due by then and, if running, whose lease can have ended by then
        (a filter: the running jobs before the horizon are read, and billed, on every such scan). The GSI
        projects only what reconciliation reads (tables.LIVE_JOB_ATTRIBUTES), never a body. The cursor is
        JSON holding each partition's last key, so a caller may keep it between invocations.
        """
        item_filter = None
        if due_before_ms is not None:
            item_filter = (
                RUNNING_JOB_DUE_BY_HORIZON,
                _names(RUNNING_JOB_DUE_BY_HORIZON),
                {":running": JobStatus.RUNNING.value, ":horizon": due_before_ms},
            )

        def fetch(partition: str, start_key: Any, page: int) -> tuple[list[LiveJob], Any]:
            items, last_key = codec.live_index_page(
                self._client,
                self._jobs,
                partition,
                start_key,
                page,
                sort_at_most=due_before_ms,
                item_filter=item_filter,
            )
            return [codec.item_to_live_job(item) for item in items], last_key

        return paging.scan_partitions(self._keyspace.live_pks(shard), fetch, cursor, limit)

    def executions(self, tenant: str, job_id: str) -> list[Execution]:
        """Returns every recorded attempt of a job, oldest first.

        Attempt 1's record is in the job item (tables.FIRST_EXECUTION), read first; a job that made no other
        attempt (its attempt counter is at most 1) needs no query of the executions table. An item an older
        version wrote holds no record: its attempt 1 is in the executions table, like every later one.
        """
        reply = self._client.get_item(
            TableName=self._jobs,
            Key=self._key(tenant, job_id),
            ConsistentRead=True,
            ProjectionExpression="#job_id, #attempt, #first",
            ExpressionAttributeNames={
                "#job_id": "job_id",
                "#attempt": "attempt",
                "#first": tables.FIRST_EXECUTION,
            },
        )
        job_item: codec.Item = reply.get("Item", {})
        first = codec.first_execution(tenant, job_item)
        if first is not None and codec.deserialize(job_item["attempt"]) <= tables.FIRST_ATTEMPT:
            return [first]
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
        by_attempt = {e.attempt: e for e in (codec.item_to_execution(tenant, item) for item in items)}
        if first is not None:
            by_attempt[first.attempt] = first
        return [by_attempt[attempt] for attempt in sorted(by_attempt)]

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
            "#live_pk = :shard, #live_sk = :now_ms, #updated = :now_ms, #change_token = :token "
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
            rule="only a dead job can be replayed",
        )

    def run_now(self, tenant: str, job_id: str, generation: int, shard: int, now_ms: int) -> Job:
        """Makes a job waiting in generation due now in the next one, attempt counter and budget unchanged.

        The new generation fences the job's earlier index entry (due or already queued): its claim no longer
        matches (CLAIMABLE), so it is dropped as stale and only the new generation's entry can deliver.
        The caller passes the job's shard (fixed at creation): its live index partition is shard and bucket.
        Raises NotFound for an unknown (or another tenant's) job and StaleState when it is not waiting in
        that generation; a repeat of this call's applied first try returns the job that try left.
        """
        update = (
            "SET #generation = #generation + :one, #due = :now_ms, #live_pk = :shard, #live_sk = :now_ms, "
            "#updated = :now_ms, #change_token = :token"
        )
        return self._transition(
            tenant,
            job_id,
            update,
            RUNNABLE_NOW,
            {
                ":scheduled": JobStatus.SCHEDULED.value,
                ":generation": generation,
                ":one": 1,
                ":now_ms": now_ms,
                ":shard": self._keyspace.live_pk(shard, job_id),
            },
            rule=f"only a job scheduled in generation {generation} can be run now",
        )

    def check(self) -> None:
        """Does one cheap read, so a health check learns whether the jobs table answers."""
        self._client.get_item(TableName=self._jobs, Key=self._key("health#", "check"), ConsistentRead=False)
