"""`hookline queues`: create or replace, list, show, pause, resume and delete named queues."""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from typing import Any

from rich.table import Table

from hookline_client import Client
from hookline_client.cli import output as out
from hookline_client.schemas import QueueView

Handler = Callable[[Client, argparse.Namespace], int]


def add_queue_commands(
    commands: Any,
    common: argparse.ArgumentParser,
    runner: Callable[[Handler], Callable[[argparse.Namespace], int]],
    show: Callable[[argparse.Namespace, Any, Any], None],
) -> None:
    """Adds `queues put|list|get|pause|resume|delete` to the top-level parser's subcommands."""
    queues = commands.add_parser("queues", help="named queues: live pause, rate and concurrency")
    actions = queues.add_subparsers(dest="action", required=True)
    put = actions.add_parser("put", parents=[common], help="create or replace a queue")
    put.add_argument("name")
    put.add_argument("--rate", metavar="LIMIT/PERIOD_S", help="e.g. 10/1: at most 10 deliveries a second")
    put.add_argument("--max-concurrency", type=int)
    put.add_argument("--max-attempts", type=int, help="default for jobs submitted to the queue")
    put.add_argument("--timeout", type=float, dest="timeout_s", help="default callback timeout (s)")
    put.add_argument("--version", type=int, help="replace only if the queue is still at this version")
    put.set_defaults(run=runner(functools.partial(_put, show=show)))
    listing = actions.add_parser("list", parents=[common], help="list queues")
    listing.set_defaults(run=runner(functools.partial(_list, show=show)))
    for name, text in (
        ("get", "show a queue and its live figures"),
        ("pause", "pause a queue: nothing starts, no attempt is spent"),
        ("resume", "resume a queue: its waiting jobs go at once"),
        ("delete", "delete a queue (its jobs go on, limited by no queue)"),
    ):
        action = actions.add_parser(name, parents=[common], help=text)
        action.add_argument("name")
        action.set_defaults(run=runner(functools.partial(_one, verb=name, show=show)))


def _put(client: Client, args: argparse.Namespace, show: Callable[..., None]) -> int:
    request: dict[str, Any] = {}
    if args.rate:
        limit, _, period = args.rate.partition("/")
        request["rate_limit"] = {"limit": int(limit), "period_s": float(period or 1)}
    optional = {
        "max_concurrency": args.max_concurrency,
        "max_attempts": args.max_attempts,
        "timeout_s": args.timeout_s,
        "version": args.version,
    }
    request |= {name: value for name, value in optional.items() if value is not None}
    queue = client.put_queue(args.name, request)
    show(args, queue, f"queue {queue.name} at version {queue.version}")
    return 0


def _list(client: Client, args: argparse.Namespace, show: Callable[..., None]) -> int:
    listing = client.list_queues()
    show(args, listing, queues_table(listing.queues))
    return 0


def _one(client: Client, args: argparse.Namespace, verb: str, show: Callable[..., None]) -> int:
    call = {
        "get": client.get_queue,
        "pause": client.pause_queue,
        "resume": client.resume_queue,
        "delete": client.delete_queue,
    }[verb]
    queue = call(args.name)
    show(
        args, queue, queue_details(queue) if verb == "get" else f"{verb}d {queue.name}".replace("ed", "d", 0)
    )
    return 0


def queues_table(queues: list[QueueView]) -> Table:
    """Returns a table of queues."""
    table = out.new_table("NAME", "STATE", "RATE", "CONCURRENCY", "VERSION")
    for q in queues:
        state = "[yellow]paused[/yellow]" if q.paused else "[green]running[/green]"
        rate = f"{q.rate_limit['limit']:g}/{q.rate_limit['period_s']:g}s" if q.rate_limit else "-"
        table.add_row(q.name, state, rate, str(q.max_concurrency or "-"), str(q.version))
    return table


def queue_details(queue: QueueView) -> Table:
    """Returns one queue with its live figures."""
    table = out.new_table("FIELD", "VALUE")
    for name, value in queue.model_dump(mode="json").items():
        if isinstance(value, dict):
            table.add_row(name, ", ".join(f"{k}={v}" for k, v in value.items()))
        elif value is not None:
            table.add_row(name, str(value))
    return table
