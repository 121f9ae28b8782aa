"""The blocking client: every route of the API as a typed method, over httpx."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType
from typing import Any, TypeVar

import httpx

from hookline_client import calls
from hookline_client.calls import Call, JobInput, QueueInput, RetryPolicy, ScheduleChange, ScheduleInput
from hookline_client.errors import TransportError
from hookline_client.schemas import (
    BatchResultView,
    DeadLetterReplayView,
    ExecutionView,
    HealthView,
    JobPageView,
    JobView,
    QueueListView,
    QueueView,
    ScheduleJobsView,
    SchedulePageView,
    ScheduleView,
    SigningSecretRotationView,
    StatsView,
)

T = TypeVar("T")
DEFAULT_TIMEOUT_S = 30.0
# Bulk replay stops after this many batches of 100 even if the API keeps saying `more` (a bounded loop).
MAX_REPLAY_BATCHES = 10_000


class Client:
    """A Hookline API client for one key; use as a context manager, or call close().

    Args:
        base_url: The API's address (the stack's ApiUrl output; `http://127.0.0.1:3000` locally).
            Defaults to HOOKLINE_API.
        api_key: `hl_<key id>_<secret>`. Defaults to HOOKLINE_KEY.
        timeout_s: Per-request timeout.
        retry: When 429 and 503 answers are retried.
        transport: An httpx transport (tests; a proxy).
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        url = base_url or os.environ.get("HOOKLINE_API")
        if not url:
            raise ValueError("give base_url or set HOOKLINE_API")
        self._http = httpx.Client(
            base_url=url.rstrip("/"),
            headers=calls.headers(api_key if api_key is not None else os.environ.get("HOOKLINE_KEY")),
            timeout=timeout_s,
            transport=transport,
            verify=calls.tls_context(),
        )
        self._retry = retry or RetryPolicy()
        self._sleep = sleep

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Closes the connections."""
        self._http.close()

    def call(self, call: Call[T]) -> T:
        """Sends one call, retrying 429 and 503 as the policy allows; returns the decoded answer."""
        retries = 0
        while True:
            try:
                response = self._http.request(call.method, call.path, **calls.request_kwargs(call))
            except httpx.TransportError as error:
                raise TransportError(f"{call.method} {call.path}: {error}") from error
            wait_s = self._retry.wait_s(call, response, retries)
            if wait_s is None:
                return calls.decode(call, response)
            retries += 1
            self._sleep(wait_s)

    # --- jobs ---------------------------------------------------------------------------------------

    def submit_job(self, job: JobInput) -> JobView:
        """Submits one job (a JobRequest, or a mapping of its fields)."""
        return self.call(calls.submit_job(job))

    def submit_batch(self, jobs: Sequence[JobInput]) -> BatchResultView:
        """Submits up to 100 jobs; each item has its own result."""
        return self.call(calls.submit_batch(jobs))

    def list_jobs(
        self, status: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> JobPageView:
        """Returns one page of jobs, newest first."""
        return self.call(calls.list_jobs(status, limit, cursor))

    def iter_jobs(self, status: str | None = None, page_size: int = 100) -> Iterator[JobView]:
        """Yields every job, newest first, following the cursor page by page."""
        return _pages(lambda cursor: self.list_jobs(status, page_size, cursor))

    def get_job(self, job_id: str) -> JobView:
        """Returns one job."""
        return self.call(calls.get_job(job_id))

    def cancel_job(self, job_id: str) -> JobView:
        """Cancels a job that has not started."""
        return self.call(calls.cancel_job(job_id))

    def list_executions(self, job_id: str) -> list[ExecutionView]:
        """Returns every attempt of a job, oldest first."""
        return self.call(calls.list_executions(job_id)).executions

    def replay_job(self, job_id: str) -> JobView:
        """Schedules a dead job again, due now."""
        return self.call(calls.replay_job(job_id))

    def run_job_now(self, job_id: str) -> JobView:
        """Makes a waiting job due now, its attempts unchanged (Conflict when it does not wait)."""
        return self.call(calls.run_job_now(job_id))

    # --- dead letters -------------------------------------------------------------------------------

    def list_dead_letters(self, limit: int | None = None, cursor: str | None = None) -> JobPageView:
        """Returns one page of dead jobs, newest first."""
        return self.call(calls.list_dead_letters(limit, cursor))

    def iter_dead_letters(self, page_size: int = 100) -> Iterator[JobView]:
        """Yields every dead job, newest first."""
        return _pages(lambda cursor: self.list_dead_letters(page_size, cursor))

    def replay_dead_letters(self, ids: Sequence[str]) -> DeadLetterReplayView:
        """Replays the given dead jobs (at most 100)."""
        return self.call(calls.replay_dead_letters(ids))

    def replay_all_dead_letters(
        self, max_batches: int = MAX_REPLAY_BATCHES
    ) -> Iterator[DeadLetterReplayView]:
        """Replays every dead job, 100 per call; yields each batch's result (for progress)."""
        for _ in range(max_batches):
            batch = self.call(calls.replay_dead_letters(None))
            yield batch
            if not batch.more or not batch.replayed:
                return

    # --- schedules ----------------------------------------------------------------------------------

    def create_schedule(self, schedule: ScheduleInput) -> ScheduleView:
        """Creates a cron schedule."""
        return self.call(calls.create_schedule(schedule))

    def list_schedules(self, limit: int | None = None, cursor: str | None = None) -> SchedulePageView:
        """Returns one page of schedules, newest first."""
        return self.call(calls.list_schedules(limit, cursor))

    def iter_schedules(self, page_size: int = 100) -> Iterator[ScheduleView]:
        """Yields every schedule, newest first."""
        cursor: str | None = None
        while True:
            page = self.list_schedules(page_size, cursor)
            yield from page.schedules
            if page.next is None:
                return
            cursor = page.next

    def get_schedule(self, schedule_id: str) -> ScheduleView:
        """Returns one schedule with its next fire times."""
        return self.call(calls.get_schedule(schedule_id))

    def update_schedule(self, schedule_id: str, change: ScheduleChange) -> ScheduleView:
        """Changes a schedule (a ScheduleUpdate, or a mapping of its fields)."""
        return self.call(calls.update_schedule(schedule_id, change))

    def pause_schedule(self, schedule_id: str) -> ScheduleView:
        """Pauses a schedule: no occurrence fires until it is resumed."""
        return self.update_schedule(schedule_id, {"paused": True})

    def resume_schedule(self, schedule_id: str) -> ScheduleView:
        """Resumes a schedule from now on (occurrences missed while paused do not fire)."""
        return self.update_schedule(schedule_id, {"paused": False})

    def delete_schedule(self, schedule_id: str) -> None:
        """Deletes a schedule; the jobs it created stay."""
        self.call(calls.delete_schedule(schedule_id))

    def list_schedule_jobs(
        self, schedule_id: str, limit: int | None = None, cursor: str | None = None
    ) -> ScheduleJobsView:
        """Returns one page of the jobs a schedule created, newest first."""
        return self.call(calls.list_schedule_jobs(schedule_id, limit, cursor))

    # --- queues -------------------------------------------------------------------------------------

    def put_queue(self, name: str, queue: QueueInput) -> QueueView:
        """Creates or replaces a queue (with `version`: only if still at that version, else Conflict)."""
        return self.call(calls.put_queue(name, queue))

    def list_queues(self) -> QueueListView:
        """Returns every queue, by name."""
        return self.call(calls.list_queues())

    def get_queue(self, name: str) -> QueueView:
        """Returns one queue with its live figures."""
        return self.call(calls.get_queue(name))

    def delete_queue(self, name: str) -> QueueView:
        """Deletes a queue; its waiting jobs go on, limited by no queue."""
        return self.call(calls.delete_queue(name))

    def pause_queue(self, name: str) -> QueueView:
        """Pauses a queue: none of its deliveries starts, no attempt is spent."""
        return self.call(calls.pause_queue(name))

    def resume_queue(self, name: str) -> QueueView:
        """Resumes a queue; its waiting jobs are released at once."""
        return self.call(calls.resume_queue(name))

    # --- stats, health, document --------------------------------------------------------------------

    def get_stats(self) -> StatsView:
        """Returns the tenant's statistics for the last hour."""
        return self.call(calls.get_stats())

    def rotate_signing_secret(self, overlap_s: int | None = None) -> SigningSecretRotationView:
        """Rotates the tenant's signing secret (the key needs secrets:write); the answer holds the new secret,
        shown once. The replaced secret signs too for overlap_s (a day when None; 0: it stops at once)."""
        return self.call(calls.rotate_signing_secret(overlap_s))

    def health(self) -> HealthView:
        """Returns the API's health (raises Unavailable naming the dependency that is down)."""
        return self.call(calls.health())

    def openapi(self) -> dict[str, Any]:
        """Returns the OpenAPI document."""
        return self.call(calls.openapi())


def _pages(fetch: Callable[[str | None], JobPageView]) -> Iterator[JobView]:
    """Yields the jobs of every page, following `next` until the last page."""
    cursor: str | None = None
    while True:
        page = fetch(cursor)
        yield from page.jobs
        if page.next is None:
            return
        cursor = page.next
