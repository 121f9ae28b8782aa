"""How the job commands print: rich tables for people, one JSON document for `--json`."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

from hookline_client import HooklineApiError
from hookline_client.schemas import ExecutionView, JobView, ScheduleView, StatsView

# Wide enough that ids and times never wrap when the output is a pipe or a file, not a terminal.
PIPE_WIDTH = 200
STATUS_STYLES = {
    "succeeded": "green",
    "dead": "red",
    "running": "yellow",
    "scheduled": "cyan",
    "cancelled": "dim",
}


def console(stderr: bool = False) -> Console:
    """Returns a console on stdout (or stderr), full width when not writing to a terminal."""
    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else PIPE_WIDTH
    return Console(file=stream, width=width, highlight=False, soft_wrap=False)


def emit_json(value: Any) -> None:
    """Prints one JSON document (models as the API's JSON)."""
    print(json.dumps(_plain(value), ensure_ascii=False))


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def _status(status: str) -> str:
    style = STATUS_STYLES.get(status)
    return f"[{style}]{status}[/{style}]" if style else status


def new_table(*columns: str) -> Table:
    table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    for column in columns:
        table.add_column(column, no_wrap=True, overflow="fold")
    return table


def jobs_table(jobs: Iterable[JobView]) -> Table:
    """Returns a table of jobs, one row each."""
    table = new_table("ID", "STATUS", "ATTEMPT", "RUN AT", "LAST", "URL")
    for job in jobs:
        last = str(job.last_status_code or job.last_error or "")
        table.add_row(
            job.id, _status(job.status), f"{job.attempt}/{job.max_attempts}", job.run_at or "", last, job.url
        )
    return table


def job_details(job: JobView) -> Table:
    """Returns one job as a two-column table of its fields."""
    table = new_table("FIELD", "VALUE")
    for name, value in job.model_dump(mode="json").items():
        if value in (None, {}, ""):
            continue
        shown = _status(value) if name == "status" else str(value)
        table.add_row(name, shown)
    return table


def attempts_table(attempts: Sequence[ExecutionView]) -> Table:
    """Returns a table of a job's attempts: status code, latency, error and response excerpt."""
    table = new_table("ATTEMPT", "OUTCOME", "STATUS", "LATENCY", "STARTED", "ERROR", "RESPONSE")
    for a in attempts:
        error = " ".join(part for part in (a.error_class, a.error_message) if part)
        preview = (a.response_preview or "").replace("\n", " ")[:60]
        table.add_row(
            str(a.attempt),
            a.outcome,
            str(a.status_code or ""),
            f"{a.latency_ms} ms",
            a.started_at or "",
            error,
            preview,
        )
    return table


def schedules_table(schedules: Iterable[ScheduleView]) -> Table:
    """Returns a table of schedules."""
    table = new_table("ID", "EXPRESSION", "TIMEZONE", "STATE", "NEXT", "URL")
    for s in schedules:
        upcoming = (s.next_fire_times or [""])[0]
        state = "[yellow]paused[/yellow]" if s.paused else "[green]active[/green]"
        table.add_row(s.id, s.expression, s.timezone, state, upcoming, str(s.job.get("url", "")))
    return table


def schedule_details(schedule: ScheduleView) -> Table:
    """Returns one schedule with its next fire times."""
    table = new_table("FIELD", "VALUE")
    for name, value in schedule.model_dump(mode="json").items():
        if name == "next_fire_times":
            table.add_row(name, "\n".join(value or ["(none: paused or past its end)"]))
        elif value is not None:
            table.add_row(name, json.dumps(value) if isinstance(value, dict) else str(value))
    return table


def stats_table(stats: StatsView) -> Table:
    """Returns the headline numbers of GET /v1/stats."""
    table = new_table("METRIC", "VALUE")
    counts = stats.last_hour
    rate = "n/a" if stats.success_rate is None else f"{stats.success_rate:.1%}"
    lag = "n/a" if stats.fire_lag_ms_avg is None else f"{stats.fire_lag_ms_avg:.0f} ms"
    rows = [
        ("dead letters (now)", str(stats.dead_letters)),
        ("ready backlog (deployment)", str(stats.backlog.ready)),
        ("due backlog (deployment)", str(stats.backlog.due)),
        ("submitted (last hour)", str(counts.submitted)),
        ("succeeded (last hour)", str(counts.succeeded)),
        ("retried (last hour)", str(counts.retried)),
        ("dead (last hour)", str(counts.dead)),
        ("cancelled (last hour)", str(counts.cancelled)),
        ("replayed (last hour)", str(counts.replayed)),
        ("success rate (last hour)", rate),
        ("mean fire lag (last hour)", lag),
    ]
    for name, value in rows:
        table.add_row(name, value)
    return table


def report_error(error: HooklineApiError, as_json: bool) -> None:
    """Prints an API error on stderr: its envelope (JSON) or one line with the request id."""
    if as_json:
        body: dict[str, Any] = {"status": error.status, "request_id": error.request_id}
        body |= error.body if isinstance(error.body, dict) else {"error": {"message": error.message}}
        print(json.dumps(body), file=sys.stderr)
        return
    line = f"error: {error.status} {error.code}: {error.message}"
    for detail in error.details:
        if detail.get("field"):
            line += f"\n  {detail['field']}: {detail.get('message', '')}"
    if error.request_id:
        line += f"\n  request id: {error.request_id}"
    console(stderr=True).print(line, markup=False)
