"""`hookline jobs`, `dead`, `schedules`, `queues`, `stats`: the API from a terminal, through hookline_client.

The API and key come from --api/--key, else HOOKLINE_API/HOOKLINE_KEY, else the local stack's
.hookline/dev.env (so `hookline jobs list` works beside a running `hookline dev` without sourcing it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from hookline_client import Client, HooklineApiError, TransportError
from hookline_client.cli import output as out
from hookline_client.cli.queues import add_queue_commands

DEV_ENV = Path(".hookline") / "dev.env"
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
TAIL_INTERVAL_S = 1.0
TERMINAL = frozenset({"succeeded", "dead", "cancelled"})


def add_job_commands(commands: Any) -> None:
    """Adds `jobs`, `dead`, `schedules`, `queues`, `stats` and `signing-secret` to the subcommands."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print JSON instead of tables")
    common.add_argument("--api", help="API base URL (default: HOOKLINE_API, then .hookline/dev.env)")
    common.add_argument("--key", help="API key (default: HOOKLINE_KEY, then .hookline/dev.env)")
    _add_jobs(commands, common)
    _add_dead(commands, common)
    _add_schedules(commands, common)
    add_queue_commands(commands, common, _runner, _show)
    stats = commands.add_parser(
        "stats", parents=[common], help="the last hour's outcomes, backlog, dead letters"
    )
    stats.set_defaults(run=_runner(_stats))
    secret = commands.add_parser("signing-secret", help="the tenant's callback signing secret")
    secret_actions = secret.add_subparsers(dest="action", required=True)
    rotate = secret_actions.add_parser(
        "rotate", parents=[common], help="a new secret (shown once); the old one signs too for --overlap-s"
    )
    rotate.add_argument(
        "--overlap-s",
        type=int,
        default=None,
        help="seconds the old secret signs too (default a day; 0: none)",
    )
    rotate.set_defaults(run=_runner(_rotate_signing_secret))


def _add_jobs(commands: Any, common: argparse.ArgumentParser) -> None:
    jobs = commands.add_parser("jobs", help="submit, list and manage jobs")
    actions = jobs.add_subparsers(dest="action", required=True)

    submit = actions.add_parser("submit", parents=[common], help="schedule a callback")
    submit.add_argument("url")
    when = submit.add_mutually_exclusive_group()
    when.add_argument("--in", dest="delay", type=duration_s, help="delay, e.g. 30s, 5m, 1h30m")
    when.add_argument("--at", type=_time, help="RFC 3339 time (no offset: local time)")
    submit.add_argument("--body", type=body_value, help="JSON or text, or @file (@- reads stdin)")
    submit.add_argument("--header", action="append", default=[], metavar="K=V", help="repeatable")
    submit.add_argument("--method", default=None, help="POST (default), PUT, PATCH, GET, DELETE")
    submit.add_argument("--idempotency-key")
    submit.add_argument("--max-attempts", type=int)
    submit.add_argument("--queue", help="a named queue (hookline queues put)")
    submit.set_defaults(run=_runner(_submit))

    listing = actions.add_parser("list", parents=[common], help="list jobs, newest first")
    listing.add_argument("--status", choices=["scheduled", "running", "succeeded", "dead", "cancelled"])
    listing.add_argument("--limit", type=int, default=20, help="jobs to show (default 20)")
    listing.add_argument("--cursor", help="continue after a `next` token")
    listing.set_defaults(run=_runner(_list))

    for name, handler, text in (
        ("get", _get, "show one job"),
        ("cancel", _cancel, "cancel a job that has not started"),
        ("replay", _replay, "schedule a dead job again, now"),
        ("run-now", _run_now, "make a waiting job due now, its attempts unchanged"),
        ("attempts", _attempts, "a job's attempts: status, latency, error, response"),
    ):
        action = actions.add_parser(name, parents=[common], help=text)
        action.add_argument("job_id")
        action.set_defaults(run=_runner(handler))

    tail = actions.add_parser("tail", parents=[common], help="follow new outcomes as they happen")
    tail.add_argument("--max", type=int, default=None, help="stop after this many outcomes")
    tail.add_argument("--timeout", type=duration_s, default=None, help="stop after this long, e.g. 30s")
    tail.add_argument("--interval", type=duration_s, default=TAIL_INTERVAL_S, help="poll period (1s)")
    tail.set_defaults(run=_runner(_tail))


def _add_dead(commands: Any, common: argparse.ArgumentParser) -> None:
    dead = commands.add_parser("dead", help="dead letters: list and replay")
    actions = dead.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", parents=[common], help="list dead jobs, newest first")
    listing.add_argument("--limit", type=int, default=20)
    listing.set_defaults(run=_runner(_dead_list))
    replay = actions.add_parser("replay", parents=[common], help="replay dead jobs by id, or --all")
    replay.add_argument("job_ids", nargs="*")
    replay.add_argument("--all", action="store_true", help="every dead job, 100 per request")
    replay.set_defaults(run=_runner(_dead_replay))


def _add_schedules(commands: Any, common: argparse.ArgumentParser) -> None:
    schedules = commands.add_parser("schedules", help="cron schedules")
    actions = schedules.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", parents=[common], help="create a schedule")
    create.add_argument("expression", help='cron, e.g. "0 9 * * MON-FRI" (6 fields: seconds first)')
    create.add_argument("url")
    create.add_argument("--timezone", default="UTC")
    create.add_argument("--body", type=body_value, help="JSON or text, or @file")
    create.add_argument("--header", action="append", default=[], metavar="K=V")
    create.add_argument("--catch-up", choices=["skip", "fire_once"], default=None)
    create.add_argument("--paused", action="store_true")
    create.set_defaults(run=_runner(_schedule_create))
    listing = actions.add_parser("list", parents=[common], help="list schedules")
    listing.add_argument("--limit", type=int, default=50)
    listing.set_defaults(run=_runner(_schedule_list))
    for name, handler, text in (
        ("get", _schedule_get, "show a schedule and its next fire times"),
        ("pause", _schedule_pause, "pause a schedule"),
        ("resume", _schedule_resume, "resume a schedule from now on"),
        ("delete", _schedule_delete, "delete a schedule (its jobs stay)"),
    ):
        action = actions.add_parser(name, parents=[common], help=text)
        action.add_argument("schedule_id")
        action.set_defaults(run=_runner(handler))


# --- arguments ------------------------------------------------------------------------------------


def duration_s(text: str) -> float:
    """Parses `90`, `30s`, `5m`, `1h30m`, `250ms` into seconds."""
    value = text.strip()
    if re.fullmatch(r"\d+(?:\.\d+)?", value):
        return float(value)
    parts = _DURATION_PART.findall(value)
    if not parts or "".join(n + u for n, u in parts) != value:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (try 30s, 5m, 1h30m)")
    return sum(float(number) * _UNIT_S[unit] for number, unit in parts)


def _time(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not an RFC 3339 time: {text!r}") from error
    return moment if moment.tzinfo else moment.astimezone()


def body_value(text: str) -> Any:
    """Returns --body as a JSON value when it parses, else as text; @file and @- read a file or stdin.

    A file that cannot be read is a usage error (argparse prints it and exits 2), never a traceback.
    """
    if text.startswith("@"):
        if text == "@-":
            text = sys.stdin.read()
        else:
            try:
                text = Path(text[1:]).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as error:
                reason = getattr(error, "strerror", None) or str(error)
                raise argparse.ArgumentTypeError(f"cannot read {text[1:]!r}: {reason}") from error
    try:
        return json.loads(text)
    except ValueError:
        return text


def _headers(pairs: list[str]) -> dict[str, str]:
    headers = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise SystemExit(f"--header takes NAME=VALUE, not {pair!r}")
        headers[name.strip()] = value
    return headers


def dev_env(path: Path = DEV_ENV) -> dict[str, str]:
    """Returns the variables of a local stack's dev.env (shell assignments), or nothing without one."""
    if not path.is_file():
        return {}
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        name, sep, value = line.partition("=")
        if sep and not line.startswith("#"):
            found[name.strip()] = "".join(shlex.split(value))
    return found


def client_for(args: argparse.Namespace) -> Client:
    """Returns a client for --api/--key, else the environment, else .hookline/dev.env."""
    fallback = dev_env(Path(os.environ.get("HOOKLINE_DEV_DIR", ".hookline")) / "dev.env")
    api = args.api or os.environ.get("HOOKLINE_API") or fallback.get("HOOKLINE_API")
    key = args.key or os.environ.get("HOOKLINE_KEY") or fallback.get("HOOKLINE_KEY")
    if not api:
        raise SystemExit("set HOOKLINE_API (and HOOKLINE_KEY), pass --api, or run `hookline dev` here")
    return Client(api, key or "")


def _runner(handler: Callable[[Client, argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Wraps a command: opens the client, prints API errors (exit 1) instead of tracebacks."""

    def run(args: argparse.Namespace) -> int:
        try:
            with client_for(args) as client:
                return handler(client, args)
        except HooklineApiError as error:
            out.report_error(error, args.json)
            return 1
        except TransportError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1

    return run


def _show(args: argparse.Namespace, value: Any, human: Any) -> None:
    """Prints value as JSON with --json, else human (a rich renderable or markup text)."""
    if args.json:
        out.emit_json(value)
    else:
        out.console().print(human)


# --- jobs -----------------------------------------------------------------------------------------


def _submit(client: Client, args: argparse.Namespace) -> int:
    request: dict[str, Any] = {"url": args.url}
    optional = {
        "delay_s": args.delay,
        "run_at": args.at.isoformat() if args.at else None,
        "body": args.body,
        "headers": _headers(args.header) or None,
        "method": args.method.upper() if args.method else None,
        "idempotency_key": args.idempotency_key,
        "max_attempts": args.max_attempts,
        "queue": args.queue,
    }
    request |= {name: value for name, value in optional.items() if value is not None}
    job = client.submit_job(request)
    if args.json:
        out.emit_json(job)
    else:
        out.console().print(f"submitted [bold]{job.id}[/bold], {job.status}, runs at {job.run_at}")
    return 0


def _list(client: Client, args: argparse.Namespace) -> int:
    page = client.list_jobs(args.status, min(max(args.limit, 1), 100), args.cursor)
    if args.json:
        out.emit_json(page)
        return 0
    out.console().print(out.jobs_table(page.jobs))
    if page.next:
        out.console().print(f"[dim]more: --cursor {page.next}[/dim]")
    return 0


def _get(client: Client, args: argparse.Namespace) -> int:
    job = client.get_job(args.job_id)
    _show(args, job, out.job_details(job))
    return 0


def _cancel(client: Client, args: argparse.Namespace) -> int:
    job = client.cancel_job(args.job_id)
    _show(args, job, f"cancelled {job.id}")
    return 0


def _replay(client: Client, args: argparse.Namespace) -> int:
    job = client.replay_job(args.job_id)
    _show(args, job, f"replayed {job.id}: {job.status}, due now")
    return 0


def _run_now(client: Client, args: argparse.Namespace) -> int:
    job = client.run_job_now(args.job_id)
    _show(args, job, f"{job.id}: {job.status}, due now (attempt {job.attempt} so far)")
    return 0


def _attempts(client: Client, args: argparse.Namespace) -> int:
    attempts = client.list_executions(args.job_id)
    _show(args, attempts, out.attempts_table(attempts))
    return 0


def _tail(client: Client, args: argparse.Namespace) -> int:
    """Polls the newest jobs and prints each change of status or attempt, from now on.

    It watches the newest 100 jobs: an older job's outcome is not seen (use `jobs list --status`).
    """
    deadline = None if args.timeout is None else time.monotonic() + args.timeout
    seen = {job.id: (job.status, job.attempt) for job in client.list_jobs(limit=100).jobs}
    shown = 0
    if not args.json:
        out.console(stderr=True).print("[dim]following outcomes; Ctrl-C stops[/dim]")
    while args.max is None or shown < args.max:
        if deadline is not None and time.monotonic() >= deadline:
            break
        time.sleep(args.interval)
        for job in reversed(client.list_jobs(limit=100).jobs):  # oldest first, as they happened
            state = (job.status, job.attempt)
            before = seen.get(job.id)
            seen[job.id] = state
            if (
                state == before
                or job.status == "running"
                or (job.attempt == 0 and job.status not in TERMINAL)
            ):
                continue  # nothing new, an attempt under way, or a new job with no outcome yet
            if args.max is not None and shown >= args.max:
                break
            shown += 1
            if args.json:
                out.emit_json(job)
            else:
                last = job.last_status_code or job.last_error or ""
                out.console().print(f"{job.updated_at}  {job.id}  {job.status:<9}  {last}", markup=False)
    return 0


# --- dead letters ---------------------------------------------------------------------------------


def _dead_list(client: Client, args: argparse.Namespace) -> int:
    page = client.list_dead_letters(min(max(args.limit, 1), 100))
    _show(args, page, out.jobs_table(page.jobs))
    return 0


def _dead_replay(client: Client, args: argparse.Namespace) -> int:
    if args.all == bool(args.job_ids):
        raise SystemExit("give job ids or --all (not both)")
    if not args.all:
        result = client.replay_dead_letters(args.job_ids)
        if args.json:
            out.emit_json(result)
        else:
            out.console().print(f"replayed {len(result.replayed)}, failed {len(result.failed)}")
            for failure in result.failed:
                out.console().print(f"  {failure.id}: {failure.error.code} {failure.error.message}")
        return 0 if not result.failed else 1
    total = client.get_stats().dead_letters  # the bar's length; the replay itself reads the table
    replayed, failed = [], []
    columns = (TextColumn("replaying dead letters"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, console=out.console(stderr=True), disable=args.json) as progress:
        task = progress.add_task("replay", total=max(total, 1))
        for batch in client.replay_all_dead_letters():
            replayed += batch.replayed
            failed += batch.failed
            progress.update(task, completed=len(replayed) + len(failed), total=max(total, len(replayed)))
    if args.json:
        out.emit_json({"replayed": replayed, "failed": failed})
    else:
        out.console().print(f"replayed {len(replayed)}, failed {len(failed)}")
    return 0 if not failed else 1


# --- schedules ------------------------------------------------------------------------------------


def _schedule_create(client: Client, args: argparse.Namespace) -> int:
    job: dict[str, Any] = {"url": args.url}
    if args.body is not None:
        job["body"] = args.body
    if args.header:
        job["headers"] = _headers(args.header)
    request: dict[str, Any] = {"expression": args.expression, "timezone": args.timezone, "job": job}
    if args.catch_up:
        request["catch_up"] = args.catch_up
    if args.paused:
        request["paused"] = True
    schedule = client.create_schedule(request)
    _show(args, schedule, f"created schedule {schedule.id}")
    return 0


def _schedule_list(client: Client, args: argparse.Namespace) -> int:
    page = client.list_schedules(min(max(args.limit, 1), 100))
    _show(args, page, out.schedules_table(page.schedules))
    return 0


def _schedule_get(client: Client, args: argparse.Namespace) -> int:
    schedule = client.get_schedule(args.schedule_id)
    _show(args, schedule, out.schedule_details(schedule))
    return 0


def _schedule_pause(client: Client, args: argparse.Namespace) -> int:
    schedule = client.pause_schedule(args.schedule_id)
    _show(args, schedule, f"paused {schedule.id}")
    return 0


def _schedule_resume(client: Client, args: argparse.Namespace) -> int:
    schedule = client.resume_schedule(args.schedule_id)
    _show(args, schedule, f"resumed {schedule.id}")
    return 0


def _schedule_delete(client: Client, args: argparse.Namespace) -> int:
    client.delete_schedule(args.schedule_id)
    if args.json:
        out.emit_json({"deleted": args.schedule_id})
    else:
        out.console().print(f"deleted {args.schedule_id}")
    return 0


def _stats(client: Client, args: argparse.Namespace) -> int:
    stats = client.get_stats()
    _show(args, stats, out.stats_table(stats))
    return 0


def _rotate_signing_secret(client: Client, args: argparse.Namespace) -> int:
    rotation = client.rotate_signing_secret(args.overlap_s)
    until = rotation.previous_signs_until
    also = f"the old secret signs too until {until}" if until else "only the new secret signs"
    _show(args, rotation, f"new signing secret: {rotation.secret}   (shown once)\n{also}")
    return 0
