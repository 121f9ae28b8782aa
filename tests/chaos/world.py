"""One fault scenario's world: Redis, the AWS endpoint, tables, receivers, handler processes, the ledger.

The test process plays the client: it submits through the real API handler (functions/submit/app.py,
in-process, as tests.support.apigw drives it) or, for bulk load, through the JobSubmitter use case the
handler calls; it does the harm, and reads DynamoDB and Redis to judge (tests.chaos.judge). Everything else
runs as separate processes: redis-server, moto (shared by the session), a cuttable proxy when asked, and
one runner process per scheduled function (tests.chaos.runner, supervised by tests.chaos.fleet).
"""

from __future__ import annotations

import logging
import os
import shutil
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config

from hookline.adapters.dynamo import codec, tables
from hookline.api import context
from hookline.domain.constants import DEFAULT_MAX_ATTEMPTS
from hookline.domain.models import Job, JobRequest
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container
from hookline.usecases.auth import mint_key
from hookline_local.template import create_tables, load_template, table_names
from tests.chaos.fleet import EXECUTE, PROMOTE, REAP, Fleet, template_rate_s
from tests.chaos.processes import REPO, CuttableProxy, MotoServer, RedisServer, ThrottlingProxy
from tests.chaos.receivers import Behaviour, ChaosReceiver, now_ms
from tests.chaos.summary import RECOVERY_TARGET_S, RESULTS_DIR
from tests.support.apigw import ApiClient, ApiResponse
from tests.support.aws import FAKE_CREDENTIALS
from tests.support.redis_server import free_port

TENANT = "chaos"
POLL_S = 0.05
SETTLE_POLL_S = 2.0  # counting live jobs is a query over the live index: moto's CPU is the suite's too
BATCH = 100
SUBMIT_THREADS = 8

SCALE = float(os.environ.get("HOOKLINE_CHAOS_SCALE", "1"))
# Promote and execute invocations take work for this long and are started back to back (see runner.py).
TICK_S = float(os.environ.get("HOOKLINE_CHAOS_TICK_S", "5"))
# The reaper runs on template.yaml's schedule (once a minute, its context the template's Timeout), as in AWS;
# set this to run it more often in an experiment. Scenarios that need a fast reaper set their own.
REAP_RATE_S = float(os.environ.get("HOOKLINE_CHAOS_REAP_RATE_S", "0")) or None
# A scenario judges its jobs this long after its last fault or due time (plus the jobs' own retry time): the
# recovery target, and slack for the scenario's own load to drain. A job still live then is stuck.
JUDGE_SLACK_S = 10.0
# Extra seconds to keep waiting for jobs that were stuck, only to measure how late recovery really is
# (the figures); the verdicts do not change. 0 in CI; e.g. 150 to see today's minute-long recoveries.
EXTRA_WAIT_S = float(os.environ.get("HOOKLINE_CHAOS_EXTRA_WAIT_S", "0"))


def scaled(count: int) -> int:
    """Returns count times HOOKLINE_CHAOS_SCALE, at least 1."""
    return max(1, round(count * SCALE))


def rfc3339(time_ms: int) -> str:
    """Formats Unix ms as RFC 3339 UTC with milliseconds, the form run_at takes."""
    return datetime.fromtimestamp(time_ms / 1000, tz=UTC).isoformat(timespec="milliseconds")


@dataclass
class Options:
    """How a scenario's world is built.

    Attributes:
        executors: Execute slots (processes) to run.
        reap_rate_s: The reaper's schedule; None keeps template.yaml's (once a minute).
        aws_proxy: Puts a cuttable proxy between every client and moto.
        aws_throttle: Puts a throttling proxy (tests.chaos.throttle_proxy) between every client and moto.
        settings_env: HOOKLINE_* variables for every process, over the production defaults.
        behaviours: The receiver behaviours the scenario's jobs use.
    """

    executors: int = 2
    reap_rate_s: float | None = None
    aws_proxy: bool = False
    aws_throttle: bool = False
    settings_env: dict[str, str] = field(default_factory=dict)
    behaviours: list[Behaviour] = field(default_factory=list)


@dataclass
class Expectation:
    """An accepted job and what its receiver behaviour says should become of it."""

    job_id: str
    behaviour: Behaviour
    due_ms: int
    accepted_ms: int
    max_attempts: int
    phase: str = ""

    @property
    def deliveries(self) -> int:
        """How many requests the job should make."""
        return self.behaviour.deliveries(self.max_attempts)


class World:
    """Builds and drives one scenario and keeps its ledger; `close()` kills every process it started."""

    def __init__(self, name: str, moto: MotoServer, options: Options) -> None:
        self.name = name
        self.options = options
        self.started_s = time.monotonic()
        self.log_dir = RESULTS_DIR / "logs" / name
        shutil.rmtree(self.log_dir, ignore_errors=True)
        self.log_dir.mkdir(parents=True)
        self._closers: list[Callable[[], None]] = []
        self.expected: dict[str, Expectation] = {}
        self.answers: Counter[int] = Counter()
        self.executor_peak_kb: dict[int, int] = {}
        self.stuck_ids: set[str] = set()
        try:
            self._build(moto, options)
        except BaseException:
            self.close()
            raise

    def _build(self, moto: MotoServer, options: Options) -> None:
        self.redis = RedisServer(free_port(), self.log_dir / "redis-data", self.log_dir / "redis.log")
        self._closers.append(self.redis.close)
        self.redis.start()
        self.moto = moto
        self.proxy: CuttableProxy | None = None
        endpoint = moto.url
        if options.aws_proxy:
            self.proxy = CuttableProxy(
                free_port(), int(moto.url.rsplit(":", 1)[1]), self.log_dir / "proxy.log"
            )
            self._closers.append(self.proxy.close)
            endpoint = self.proxy.url
        self.throttler: ThrottlingProxy | None = None
        if options.aws_throttle:
            self.throttler = ThrottlingProxy(
                free_port(), int(moto.url.rsplit(":", 1)[1]), self.log_dir / "throttle-proxy.log"
            )
            self._closers.append(self.throttler.close)
            endpoint = self.throttler.url
        suffix = uuid.uuid4().hex[:8]
        self.env = {
            **os.environ,
            **FAKE_CREDENTIALS,
            "HOOKLINE_REDIS_URL": self.redis.url,
            "HOOKLINE_AWS_ENDPOINT": endpoint,
            "HOOKLINE_JOBS_TABLE": f"chaos-jobs-{suffix}",
            "HOOKLINE_EXECUTIONS_TABLE": f"chaos-executions-{suffix}",
            "HOOKLINE_API_KEYS_TABLE": f"chaos-keys-{suffix}",
            "HOOKLINE_ALLOW_LOOPBACK": "true",
            **options.settings_env,
            "POWERTOOLS_SERVICE_NAME": "hookline",
            "POWERTOOLS_METRICS_NAMESPACE": "Hookline",
            # Overlapping invocations in one runner share a metric set, as in the local stack: no flushing.
            "POWERTOOLS_METRICS_DISABLED": "true",
            "POWERTOOLS_TRACE_DISABLED": "true",
            "POWERTOOLS_LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
            # Metrics are off (above), and Powertools says so after every invocation.
            "PYTHONWARNINGS": "ignore:No application metrics to publish",
            "PYTHONPATH": str(REPO),
        }
        self.settings = Settings.from_env(self.env)
        # The judge reads DynamoDB directly, never through the proxy it cuts.
        self.judge = Container(replace(self.settings, aws_endpoint_url=moto.url), consumer="chaos-judge")
        # The judge reads every job at the end, from an emulator a scenario may have left busy: it gets
        # patient timeouts, not the handlers' short ones (those are part of what is tested).
        self.judge.__dict__["dynamodb"] = boto3.client(
            "dynamodb",
            endpoint_url=moto.url,
            region_name=self.settings.aws_region,
            config=Config(
                connect_timeout=10, read_timeout=120, retries={"mode": "standard", "max_attempts": 5}
            ),
        )
        self._closers.append(self.judge.close)
        create_tables(self.judge.dynamodb, load_template(), table_names(self.settings))
        # The in-process API logs every Redis or DynamoDB failure with its traceback: dozens per outage,
        # which would bury the scenario's summary in pytest's output. The handler processes log to files.
        api_logger = logging.getLogger("hookline")
        level = api_logger.level
        api_logger.setLevel(logging.CRITICAL)
        self._closers.append(lambda: api_logger.setLevel(level))
        # The API handler runs in this process, against the same endpoints as the handlers.
        self.api_container = Container(self.settings, consumer="chaos-api")
        self._closers.append(self.api_container.close)
        previous = context.container()
        context.use(self.api_container)
        # Later tests in the session drive the same module-level routes: hand them back their container.
        self._closers.append(lambda: context.use(previous))
        record, api_key = mint_key(TENANT, now_ms(), rate_limit_per_s=10_000)
        self.judge.keys.put_key(record)
        self.api = ApiClient(api_key)
        self.receiver = ChaosReceiver(options.behaviours)
        self.receiver.__enter__()
        self._closers.append(lambda: self.receiver.__exit__(None, None, None))
        self.elsewhere = ChaosReceiver()
        self.elsewhere.__enter__()
        self._closers.append(lambda: self.elsewhere.__exit__(None, None, None))
        self.receiver.elsewhere_origin = self.elsewhere.origin
        self.fleet = Fleet(self.env, self.log_dir)
        self._closers.append(self.fleet.close)
        self.fleet.add("promote", PROMOTE, TICK_S, TICK_S)
        for number in range(options.executors):
            self.fleet.add(f"execute-{number}", EXECUTE, TICK_S, TICK_S)
        reap_rate = options.reap_rate_s or REAP_RATE_S or template_rate_s(REAP)
        self.fleet.add("reap", REAP, reap_rate, None if reap_rate == template_rate_s(REAP) else reap_rate)
        self.wait_warm()

    # -- driving -----------------------------------------------------------------------------------

    def wait_warm(self, timeout_s: float = 90.0) -> None:
        """Waits until every handler process has loaded its handler and started its first invocation."""
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            self.poll()
            slots = [slot for slot in self.fleet.slots.values() if slot.child is not None]
            if all('"event": "invoke"' in _read(slot.child.log_path) for slot in slots if slot.child):
                return
            time.sleep(0.1)
        tails = "\n".join(f"--- {s.name}\n{s.child.log_tail()}" for s in self.fleet.slots.values() if s.child)
        raise RuntimeError(f"the handler processes did not start within {timeout_s:.0f} s\n{tails}")

    def warm_up(self, behaviour: Behaviour, count: int = 4, timeout_s: float = 60.0) -> None:
        """Sends a few jobs through before any harm: the tenant's signing secret exists, pools are open."""
        self.submit_batch(behaviour, [now_ms()] * count, phase="warmup")
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            self.sleep(0.1)
            if self.receiver.count() >= count and self.live_count() == 0:
                return
        raise RuntimeError(f"warm-up jobs were not delivered within {timeout_s:.0f} s")

    def poll(self) -> None:
        """Restarts dead handler processes at their next tick and samples executor memory."""
        self.fleet.poll()
        for slot in self.fleet.executors():
            if slot.child is not None and slot.child.alive():
                rss, _ = slot.child.memory_kb()
                self.executor_peak_kb[slot.child.pid] = max(rss, self.executor_peak_kb.get(slot.child.pid, 0))

    def sleep(self, seconds: float) -> None:
        """Waits, supervising the fleet meanwhile."""
        self.sleep_until(time.monotonic() + seconds)

    def sleep_until(self, monotonic_s: float) -> None:
        """Waits until a time.monotonic() value, supervising the fleet meanwhile."""
        while (left := monotonic_s - time.monotonic()) > 0:
            self.poll()
            time.sleep(min(POLL_S, left))

    def job_request(self, behaviour: Behaviour, due_ms: int, **fields: Any) -> dict[str, Any]:
        """Returns a POST /v1/jobs body for a job of this behaviour due at due_ms."""
        return {
            "url": self.receiver.url(behaviour, uuid.uuid4().hex[:6]),
            "run_at": rfc3339(due_ms),
            "body": {"n": 1},
            **fields,
        }

    def submit_batch(
        self, behaviour: Behaviour, due_times: Iterable[int], phase: str = "", **fields: Any
    ) -> int:
        """Submits jobs through POST /v1/jobs/batch, 100 per request; returns how many were accepted."""
        due_list = list(due_times)
        accepted = 0
        for start in range(0, len(due_list), BATCH):
            self.poll()
            jobs = [self.job_request(behaviour, due, **fields) for due in due_list[start : start + BATCH]]
            response = self.api.post("/v1/jobs/batch", {"jobs": jobs})
            self.answers[response.status] += 1
            if response.status != 200:
                continue
            for item in response.json()["results"]:
                self.answers[item["status"]] += 1
                if item["status"] == 201:
                    accepted += 1
                    self._accept(item["job"], behaviour, phase)
        return accepted

    def submit_direct(
        self, behaviour: Behaviour, due_times: list[int], phase: str = "", **fields: Any
    ) -> int:
        """Submits jobs through the JobSubmitter use case (what POST /v1/jobs calls) from SUBMIT_THREADS
        threads: the API handler serves one request at a time per process, too slow to load 1,000 jobs
        while two cores also deliver them. Returns how many were accepted (submit returned a job)."""

        def submit(due_ms: int) -> tuple[str, int] | None:
            request = JobRequest.model_validate(self.job_request(behaviour, due_ms, **fields))
            try:
                result = self.api_container.submitter.submit(TENANT, request)
            except Exception:
                return None
            return result.job.job_id, result.job.due_ms

        accepted = 0
        with ThreadPoolExecutor(SUBMIT_THREADS, thread_name_prefix="chaos-submit") as pool:
            for outcome in pool.map(submit, due_times):
                self.answers[201 if outcome else 503] += 1
                if outcome:
                    accepted += 1
                    job_id, due_ms = outcome
                    self.expected[job_id] = Expectation(
                        job_id,
                        behaviour,
                        due_ms,
                        now_ms(),
                        int(fields.get("max_attempts", DEFAULT_MAX_ATTEMPTS)),
                        phase,
                    )
        return accepted

    def schedule(
        self,
        behaviour: Behaviour,
        count: int,
        per_s: float,
        lead_s: float = 3.0,
        phase: str = "",
        between: Callable[[list[int]], None] | None = None,
        **fields: Any,
    ) -> list[int]:
        """Submits count jobs falling due per_s a second, in chunks of 100; returns their due times.

        No job falls due before its chunk was submitted: each chunk starts at least lead_s plus twice the
        last chunk's submit time from now (a job already due when submitted would skip the promoter, and
        its lateness would be the submitter's). between(due times so far) runs after each chunk.
        """
        due: list[int] = []
        lead_ms = int(lead_s * 1000)
        step_ms = 1000 / per_s
        while len(due) < count:
            first = max(now_ms() + lead_ms, int(due[-1] + step_ms) if due else 0)
            chunk = [first + int(i * step_ms) for i in range(min(BATCH, count - len(due)))]
            sent_ms = now_ms()
            self.submit_direct(behaviour, chunk, phase, **fields)
            lead_ms = int(lead_s * 1000) + 2 * (now_ms() - sent_ms)
            due += chunk
            self.poll()
            if between is not None:
                between(due)
        return due

    def submit_one(self, behaviour: Behaviour, due_ms: int, phase: str = "", **fields: Any) -> ApiResponse:
        """Submits one job through POST /v1/jobs; records it when the answer is 201."""
        response = self.api.post("/v1/jobs", self.job_request(behaviour, due_ms, **fields))
        self.answers[response.status] += 1
        if response.status == 201:
            self._accept(response.json(), behaviour, phase)
        return response

    def _accept(self, job: dict[str, Any], behaviour: Behaviour, phase: str) -> None:
        due_ms = int(datetime.fromisoformat(job["run_at"]).timestamp() * 1000)
        self.expected[job["id"]] = Expectation(
            job["id"], behaviour, due_ms, now_ms(), job["max_attempts"], phase
        )

    # -- reading the engine's state ----------------------------------------------------------------

    def jobs(self) -> dict[str, Job]:
        """Returns every job of the tenant as DynamoDB holds it (every bucket of the tenant)."""
        found: dict[str, Job] = {}
        for pk in (tables.bucket_pk(TENANT, bucket) for bucket in range(self.settings.job_buckets)):
            request: dict[str, Any] = {
                "TableName": self.settings.jobs_table,
                "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :prefix)",
                "ExpressionAttributeNames": {"#pk": tables.JOBS_PK, "#sk": tables.JOBS_SK},
                "ExpressionAttributeValues": codec.to_attribute_values(
                    {":pk": pk, ":prefix": tables.JOB_SK_PREFIX}
                ),
                "ConsistentRead": True,
            }
            while True:
                reply = self.judge.dynamodb.query(**request)
                for item in reply.get("Items", []):
                    job = codec.item_to_job(item)
                    found[job.job_id] = job
                if "LastEvaluatedKey" not in reply:
                    break
                request["ExclusiveStartKey"] = reply["LastEvaluatedKey"]
        return found

    def live_count(self) -> int:
        """Returns how many jobs are scheduled or running (the live index), across shards."""
        total = 0
        keyspace = tables.Keyspace(self.settings.job_buckets)
        for partition in (p for shard in range(self.settings.shards) for p in keyspace.live_pks(shard)):
            request: dict[str, Any] = {
                "TableName": self.settings.jobs_table,
                "IndexName": tables.LIVE_INDEX,
                "KeyConditionExpression": "#live_pk = :partition",
                "ExpressionAttributeNames": {"#live_pk": tables.LIVE_PK},
                "ExpressionAttributeValues": codec.to_attribute_values({":partition": partition}),
                "Select": "COUNT",
            }
            while True:
                reply = self.judge.dynamodb.query(**request)
                total += int(reply.get("Count", 0))
                if "LastEvaluatedKey" not in reply:
                    break
                request["ExclusiveStartKey"] = reply["LastEvaluatedKey"]
        return total

    def wait_settled(self, deadline_s: float) -> bool:
        """Waits (supervising) until no job is live or the monotonic deadline passes; True if settled."""
        while time.monotonic() < deadline_s:
            self.sleep(min(SETTLE_POLL_S, max(0.0, deadline_s - time.monotonic())))
            if self.live_count() == 0:
                return True
        return self.live_count() == 0

    def last_due_ms(self) -> int:
        """Returns the latest first due time of any accepted job."""
        return max((e.due_ms for e in self.expected.values()), default=now_ms())

    def settle(self, quiet_from_ms: int, natural_s: float = 0.0) -> None:
        """Waits for every job to end, and judges which did not in time.

        Args:
            quiet_from_ms: The last fault's end or the last due time, whichever is later (wall ms).
            natural_s: How long the jobs take on their own after that (retries, Retry-After waits).

        Jobs still live RECOVERY_TARGET_S + JUDGE_SLACK_S after that are stuck; with
        HOOKLINE_CHAOS_EXTRA_WAIT_S the wait goes on, so that the figures show how late they came.
        """
        wait_s = max(0, quiet_from_ms - now_ms()) / 1000 + natural_s + RECOVERY_TARGET_S + JUDGE_SLACK_S
        if not self.wait_settled(time.monotonic() + wait_s):
            self.stuck_ids = {job_id for job_id, job in self.jobs().items() if job.status.is_live}
            if EXTRA_WAIT_S:
                self.wait_settled(time.monotonic() + EXTRA_WAIT_S)

    def close(self) -> None:
        """Kills every process and closes every client this world opened, newest first."""
        errors = []
        for closer in reversed(self._closers):
            try:
                closer()
            except Exception as error:  # teardown goes on: one failure must not leak the rest
                errors.append(error)
        self._closers.clear()
        if errors:
            raise errors[0]


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
