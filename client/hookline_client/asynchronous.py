"""The asyncio client: the same methods as Client, awaited, over httpx.AsyncClient."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
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
from hookline_client.sync import DEFAULT_TIMEOUT_S, MAX_REPLAY_BATCHES

T = TypeVar("T")


class AsyncClient:
    """A Hookline API client for asyncio; `async with AsyncClient(...) as client:` (arguments as Client)."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        url = base_url or os.environ.get("HOOKLINE_API")
        if not url:
            raise ValueError("give base_url or set HOOKLINE_API")
        self._http = httpx.AsyncClient(
            base_url=url.rstrip("/"),
            headers=calls.headers(api_key if api_key is not None else os.environ.get("HOOKLINE_KEY")),
            timeout=timeout_s,
            transport=transport,
            verify=calls.tls_context(),
        )
        self._retry = retry or RetryPolicy()
        self._sleep = sleep

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Closes the connections."""
        await self._http.aclose()

    async def call(self, call: Call[T]) -> T:
        """Sends one call, retrying 429 and 503 as the policy allows; returns the decoded answer."""
        retries = 0
        while True:
            try:
                response = await self._http.request(call.method, call.path, **calls.request_kwargs(call))
            except httpx.TransportError as error:
                raise TransportError(f"{call.method} {call.path}: {error}") from error
            wait_s = self._retry.wait_s(call, response, retries)
            if wait_s is None:
                return calls.decode(call, response)
            retries += 1
            await self._sleep(wait_s)

    async def submit_job(self, job: JobInput) -> JobView:
        """Submits one job (a JobRequest, or a mapping of its fields)."""
        return await self.call(calls.submit_job(job))

    async def submit_batch(self, jobs: Sequence[JobInput]) -> BatchResultView:
        """Submits up to 100 jobs; each item has its own result."""
        return await self.call(calls.submit_batch(jobs))

    async def list_jobs(
        self, status: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> JobPageView:
        """Returns one page of jobs, newest first."""
        return await self.call(calls.list_jobs(status, limit, cursor))

    async def iter_jobs(self, status: str | None = None, page_size: int = 100) -> AsyncIterator[JobView]:
        """Yields every job, newest first, following the cursor page by page."""
        cursor: str | None = None
        while True:
            page = await self.list_jobs(status, page_size, cursor)
            for job in page.jobs:
                yield job
            if page.next is None:
                return
            cursor = page.next

    async def get_job(self, job_id: str) -> JobView:
        """Returns one job."""
        return await self.call(calls.get_job(job_id))

    async def cancel_job(self, job_id: str) -> JobView:
        """Cancels a job that has not started."""
        return await self.call(calls.cancel_job(job_id))

    async def list_executions(self, job_id: str) -> list[ExecutionView]:
        """Returns every attempt of a job, oldest first."""
        return (await self.call(calls.list_executions(job_id))).executions

    async def replay_job(self, job_id: str) -> JobView:
        """Schedules a dead job again, due now."""
        return await self.call(calls.replay_job(job_id))

    async def run_job_now(self, job_id: str) -> JobView:
        """Makes a waiting job due now, its attempts unchanged (Conflict when it does not wait)."""
        return await self.call(calls.run_job_now(job_id))

    async def list_dead_letters(self, limit: int | None = None, cursor: str | None = None) -> JobPageView:
        """Returns one page of dead jobs, newest first."""
        return await self.call(calls.list_dead_letters(limit, cursor))

    async def iter_dead_letters(self, page_size: int = 100) -> AsyncIterator[JobView]:
        """Yields every dead job, newest first."""
        cursor: str | None = None
        while True:
            page = await self.list_dead_letters(page_size, cursor)
            for job in page.jobs:
                yield job
            if page.next is None:
                return
            cursor = page.next

    async def replay_dead_letters(self, ids: Sequence[str]) -> DeadLetterReplayView:
        """Replays the given dead jobs (at most 100)."""
        return await self.call(calls.replay_dead_letters(ids))

    async def replay_all_dead_letters(
        self, max_batches: int = MAX_REPLAY_BATCHES
    ) -> AsyncIterator[DeadLetterReplayView]:
        """Replays every dead job, 100 per call; yields each batch's result."""
        for _ in range(max_batches):
            batch = await self.call(calls.replay_dead_letters(None))
            yield batch
            if not batch.more or not batch.replayed:
                return

    async def create_schedule(self, schedule: ScheduleInput) -> ScheduleView:
        """Creates a cron schedule."""
        return await self.call(calls.create_schedule(schedule))

    async def list_schedules(self, limit: int | None = None, cursor: str | None = None) -> SchedulePageView:
        """Returns one page of schedules, newest first."""
        return await self.call(calls.list_schedules(limit, cursor))

    async def iter_schedules(self, page_size: int = 100) -> AsyncIterator[ScheduleView]:
        """Yields every schedule, newest first."""
        cursor: str | None = None
        while True:
            page = await self.list_schedules(page_size, cursor)
            for schedule in page.schedules:
                yield schedule
            if page.next is None:
                return
            cursor = page.next

    async def get_schedule(self, schedule_id: str) -> ScheduleView:
        """Returns one schedule with its next fire times."""
        return await self.call(calls.get_schedule(schedule_id))

    async def update_schedule(self, schedule_id: str, change: ScheduleChange) -> ScheduleView:
        """Changes a schedule."""
        return await self.call(calls.update_schedule(schedule_id, change))

    async def pause_schedule(self, schedule_id: str) -> ScheduleView:
        """Pauses a schedule."""
        return await self.update_schedule(schedule_id, {"paused": True})

    async def resume_schedule(self, schedule_id: str) -> ScheduleView:
        """Resumes a schedule from now on."""
        return await self.update_schedule(schedule_id, {"paused": False})

    async def delete_schedule(self, schedule_id: str) -> None:
        """Deletes a schedule; the jobs it created stay."""
        await self.call(calls.delete_schedule(schedule_id))

    async def list_schedule_jobs(
        self, schedule_id: str, limit: int | None = None, cursor: str | None = None
    ) -> ScheduleJobsView:
        """Returns one page of the jobs a schedule created."""
        return await self.call(calls.list_schedule_jobs(schedule_id, limit, cursor))

    # --- queues -------------------------------------------------------------------------------------

    async def put_queue(self, name: str, queue: QueueInput) -> QueueView:
        """Creates or replaces a queue (with `version`: only if still at that version, else Conflict)."""
        return await self.call(calls.put_queue(name, queue))

    async def list_queues(self) -> QueueListView:
        """Returns every queue, by name."""
        return await self.call(calls.list_queues())

    async def get_queue(self, name: str) -> QueueView:
        """Returns one queue with its live figures."""
        return await self.call(calls.get_queue(name))

    async def delete_queue(self, name: str) -> QueueView:
        """Deletes a queue; its waiting jobs go on, limited by no queue."""
        return await self.call(calls.delete_queue(name))

    async def pause_queue(self, name: str) -> QueueView:
        """Pauses a queue: none of its deliveries starts, no attempt is spent."""
        return await self.call(calls.pause_queue(name))

    async def resume_queue(self, name: str) -> QueueView:
        """Resumes a queue; its waiting jobs are released at once."""
        return await self.call(calls.resume_queue(name))

    async def get_stats(self) -> StatsView:
        """Returns the tenant's statistics for the last hour."""
        return await self.call(calls.get_stats())

    async def rotate_signing_secret(self, overlap_s: int | None = None) -> SigningSecretRotationView:
        """Rotates the tenant's signing secret (the key needs secrets:write); the answer holds the new secret,
        shown once. The replaced secret signs too for overlap_s (a day when None; 0: it stops at once)."""
        return await self.call(calls.rotate_signing_secret(overlap_s))

    async def health(self) -> HealthView:
        """Returns the API's health."""
        return await self.call(calls.health())

    async def openapi(self) -> dict[str, Any]:
        """Returns the OpenAPI document."""
        return await self.call(calls.openapi())
