"""What a run leaves: tables (printed, and as Markdown for the README), compare.json and fire_lag.png."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from pathlib import Path

from bench.compare import costs, prices
from bench.compare.scenarios import REDIS_COMMAND_PREFIX, Figures

PEERS = ("celery", "rq", "arq", "dramatiq")
Cell = Callable[[Figures], str]


def _number(key: str, fmt: str, ranged: bool = False) -> Cell:
    """A figure; with ranged, a median over rounds is followed by its range: "median (lowest-highest)"."""

    def cell(r: Figures) -> str:
        value = r.values.get(key)
        if value is None or math.isnan(value):
            return "-"
        low_high = r.ranges.get(key) if ranged else None
        if low_high is None:
            return fmt.format(value)
        return f"{fmt.format(value)} ({fmt.format(low_high[0])}-{fmt.format(low_high[1])})"

    return cell


def _pair(first: str, second: str, fmt: str = "{:.0f}") -> Cell:
    def cell(r: Figures) -> str:
        return f"{_number(first, fmt)(r)} / {_number(second, fmt)(r)}"

    return cell


def _summed(suffix: str, prefixes: tuple[str, ...]) -> Cell:
    def cell(r: Figures) -> str:
        found = [r.values[f"{p}_{suffix}"] for p in prefixes if f"{p}_{suffix}" in r.values]
        return f"{sum(found):.0f}" if found else "-"

    return cell


def _ratio(key: str, results: list[Figures]) -> Cell:
    """A figure over the best peer's (medians over rounds)."""
    best = max((r.values.get(key, 0.0) for r in results if r.system in PEERS), default=0.0)

    def cell(r: Figures) -> str:
        value = r.values.get(key)
        return "-" if value is None or not best else f"{value / best:.2f}x"

    return cell


SCENARIOS = ("dispatch", "batch_dispatch", "drain", "lag5000", "lag1000", "lag100")


def speed_columns(results: list[Figures]) -> list[tuple[str, Cell]]:
    """Columns of the first table: throughput against the best peer, fire lag, early/duplicate/lost."""
    return [
        ("dispatch/s", _number("dispatch_per_s", "{:.0f}", ranged=True)),
        ("vs best peer", _ratio("dispatch_per_s", results)),
        ("drain/s", _number("drain_per_s", "{:.0f}", ranged=True)),
        ("vs best peer", _ratio("drain_per_s", results)),
        ("submit/s", _number("submit_per_s", "{:.0f}")),
        ("lag 5000/s p50 / p99 ms", _pair("lag5000_p50_ms", "lag5000_p99_ms")),
        ("lag 5000/s p99 range", _range("lag5000_p99_ms")),
        ("lag 1000/s p50 / p99 ms", _pair("lag1000_p50_ms", "lag1000_p99_ms")),
        ("lag 1000/s p99 range", _range("lag1000_p99_ms")),
        ("lag 100/s p50 / p99 ms", _pair("lag100_p50_ms", "lag100_p99_ms")),
        ("early", _summed("early", ("lag5000", "lag1000", "lag100"))),
        ("duplicates", _summed("duplicates", SCENARIOS)),
        ("lost", _summed("lost", SCENARIOS)),
    ]


def _range(key: str) -> Cell:
    def cell(r: Figures) -> str:
        low_high = r.ranges.get(key)
        return "-" if low_high is None else f"{low_high[0]:.0f}-{low_high[1]:.0f}"

    return cell


def batch_columns(results: list[Figures]) -> list[tuple[str, Cell]]:
    """Columns of the batch table: dispatch with each system's batch enqueue, and its submit CPU."""
    return [
        ("dispatch/s", _number("batch_dispatch_per_s", "{:.0f}", ranged=True)),
        ("vs best peer", _ratio("batch_dispatch_per_s", results)),
        ("submit/s", _number("batch_submit_per_s", "{:.0f}")),
        ("client CPU ms", _number("batch_client_cpu_ms_per_job", "{:.3f}")),
        ("API CPU ms", _number("batch_api_cpu_ms_per_job", "{:.3f}")),
        ("all CPU ms", _number("batch_total_cpu_ms_per_job", "{:.2f}")),
        ("lost", _number("batch_dispatch_lost", "{:.0f}")),
    ]


def cpu_columns() -> list[tuple[str, Cell]]:
    """Columns of the CPU table: each process's CPU per job in the dispatch scenario."""
    return [
        ("client", _number("client_cpu_ms_per_job", "{:.3f}")),
        ("API", _number("api_cpu_ms_per_job", "{:.3f}")),
        ("workers", _number("worker_cpu_ms_per_job", "{:.3f}")),
        ("store", _number("store_cpu_ms_per_job", "{:.3f}")),
        ("redis-server", _number("redis_cpu_ms_per_job", "{:.3f}")),
        ("all of the system", _number("total_cpu_ms_per_job", "{:.2f}")),
        ("receiver", _number("receiver_cpu_ms_per_job", "{:.3f}")),
    ]


def cost_columns() -> list[tuple[str, Cell]]:
    """Columns of the cost table: what one job costs in Redis, DynamoDB, Lambda and dollars."""
    reference = costs.REFERENCE_JOBS_PER_MONTH // 10**6
    return [
        ("Redis cmds", _number("redis_commands_per_job", "{:.1f}")),
        ("Redis B/scheduled", _number("redis_bytes_per_scheduled_job", "{:.0f}")),
        ("DynamoDB req", _number("dynamodb_requests_per_job", "{:.2f}")),
        ("WRU", _number("dynamodb_wru_per_job", "{:.2f}")),
        ("index WRU", _number("dynamodb_index_wru_per_job", "{:.2f}")),
        ("RRU", _number("dynamodb_rru_per_job", "{:.3f}")),
        ("λ invocations", _number("lambda_invocations_per_job", "{:.3f}")),
        ("$/M marginal", _number("usd_marginal", "{:.2f}")),
        ("$/month idle", _number("usd_idle_per_month", "{:.0f}")),
        ("$/M marginal, batch submits", _number("usd_marginal_batched", "{:.2f}")),
        (f"$/M at {reference} M/month", _number("usd_total_at_reference", "{:.2f}")),
    ]


def latency_columns() -> list[tuple[str, Cell]]:
    """Columns of the third table: submit requests through the local gateway, one at a time."""
    return [
        ("POST /v1/jobs p50 / p99 ms", _pair("submit_single_p50_ms", "submit_single_p99_ms", "{:.1f}")),
        ("POST /v1/jobs/batch (100) p50 / p99 ms", _pair("submit_batch_p50_ms", "submit_batch_p99_ms")),
    ]


def render(rows: list[Figures], columns: list[tuple[str, Cell]], markdown: bool = False) -> str:
    """Formats one table, a row per system (right-aligned text, or Markdown)."""
    grid = [["system", *(title for title, _ in columns)]]
    grid += [[r.system, *(cell(r) for _, cell in columns)] for r in rows]
    if markdown:
        lines = ["| " + " | ".join(row) + " |" for row in grid]
        lines.insert(1, "|" + "---|" + "---:|" * len(columns))
        return "\n".join(lines)
    widths = [max(len(row[i]) for row in grid) for i in range(len(grid[0]))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in grid)


def add_costs(results: list[Figures]) -> float:
    """Prices every Hookline row (costs.per_million); returns the submit duration used (ms)."""
    measured = [r.values for r in results if "submit_single_p50_ms" in r.values]
    submit_ms = measured[0]["submit_single_p50_ms"] if measured else costs.DEFAULT_SUBMIT_MS
    batch_ms = measured[0]["submit_batch_p50_ms"] if measured else None
    for result in results:
        result.values.update(costs.per_million(result.values, submit_ms, batch_ms))
    return submit_ms


def tables(results: list[Figures], markdown: bool = False) -> str:
    """Returns every table of the run, titled."""
    hookline = [r for r in results if "dynamodb_requests_per_job" in r.values or "usd_marginal" in r.values]
    costed = hookline + [r for r in results if r not in hookline and r.system != "ceiling"]
    latency = [r for r in results if "submit_single_p50_ms" in r.values]
    batched = [r for r in results if "batch_dispatch_per_s" in r.values]
    parts = [
        (
            "Throughput and fire lag (one submit call per job, the same client for every system)",
            results,
            speed_columns(results),
        ),
        ("Batch submit (each system's batch enqueue, the same client)", batched, batch_columns(batched)),
        ("CPU ms per job by process (dispatch)", costed, cpu_columns()),
        ("Cost per job", costed, cost_columns()),
        ("Submit latency through the local gateway, one request at a time", latency, latency_columns()),
    ]
    out = []
    for title, rows, columns in parts:
        if rows:
            out.append(f"{'### ' if markdown else ''}{title}\n\n{render(rows, columns, markdown)}")
    return "\n\n".join(out)


def redis_breakdown(results: list[Figures]) -> list[str]:
    """Returns, per system, the dispatch scenario's Redis commands per job by name, most called first."""
    lines = []
    for r in results:
        by_name = {
            name.removeprefix(REDIS_COMMAND_PREFIX): value
            for name, value in r.values.items()
            if name.startswith(REDIS_COMMAND_PREFIX)
        }
        shown = [f"{name} {value:.2f}" for name, value in sorted(by_name.items(), key=lambda kv: -kv[1])]
        shown = [cell for cell in shown if not cell.endswith(" 0.00")]
        if shown:
            lines.append(f"{r.system}: {', '.join(shown)}")
    return lines


def notes(results: list[Figures], submit_ms: float) -> list[str]:
    """Returns the run's notes: each system's, and how the dollars were reckoned."""
    lines = [f"{r.system}: {note}" for r in results for note in r.notes]
    lines.append(
        f"$: AWS list prices ({prices.REGION}, written {prices.PRICES_WRITTEN}, bench/compare/prices.py) "
        f"for jobs submitted one per request (batch submits: 100 per request, billed the measured batch "
        f"p50) and delivered at the first attempt; submit λ billed {submit_ms:.0f} ms; idle costs of the "
        f"default template (ElastiCache x2, scheduled λ, NAT gateway, alarms and dashboard) "
        f"${costs.usd_idle_per_month():.0f}/month, amortised over "
        f"{costs.REFERENCE_JOBS_PER_MONTH / 1e6:.0f} M jobs/month (bench/compare/costs.py; the cheaper "
        f"configurations: docs/capacity.md)"
    )
    lines.append(managed_prices())
    return lines


def managed_prices() -> str:
    """Returns the list prices of managed callback schedulers, with their sources, for comparison."""
    listed = "; ".join(
        f"{name} ${usd:.2f}/M {counted} ({source})" for name, usd, counted, source in prices.MANAGED_SERVICES
    )
    return f"managed services' list prices, written {prices.PRICES_WRITTEN}: {listed}"


def write(results: list[Figures], out: Path, elapsed_s: float) -> str:
    """Writes compare.json, compare.md and fire_lag.png into out; returns the printed report."""
    submit_ms = add_costs(results)
    scale = os.environ.get("BENCH_SCALE", "1.0")
    header = f"BENCH_SCALE={scale}, {os.cpu_count()} CPUs, {elapsed_s / 60:.0f} min"
    run_notes = notes(results, submit_ms)
    document = {
        "scale": scale,
        "cpus": os.cpu_count(),
        "elapsed_s": elapsed_s,
        "prices": {"region": prices.REGION, "written": prices.PRICES_WRITTEN},
        "fixed_usd_per_hour": costs.fixed_per_hour(),
        "usd_idle_per_month": costs.usd_idle_per_month(),
        "notes": run_notes,
        "results": [
            {
                "system": r.system,
                "values": {name: _json_number(value) for name, value in r.values.items()},
                "notes": r.notes,
                "ranges": {name: list(low_high) for name, low_high in r.ranges.items()},
                "lags_ms": {label: [round(v, 1) for v in lags] for label, lags in r.lags_ms.items()},
            }
            for r in results
        ],
    }
    (out / "compare.json").write_text(json.dumps(document, indent=1, allow_nan=False) + "\n")
    bullet_notes = "\n".join(f"- {line}" for line in run_notes)
    breakdown = redis_breakdown(results)
    by_name = "Redis commands per job by name (dispatch)"
    bullet_breakdown = "\n".join(f"- {line}" for line in breakdown)
    (out / "compare.md").write_text(
        f"{header}\n\n{tables(results, markdown=True)}\n\n### {by_name}\n\n{bullet_breakdown}\n\n"
        f"{bullet_notes}\n"
    )
    plot(results, out / "fire_lag.png")
    return f"{header}\n\n{tables(results)}\n\n{by_name}\n" + "\n".join([*breakdown, "", *run_notes])


def _json_number(value: float) -> float | None:
    """Returns value, or None for a figure that could not be measured (nan)."""
    return None if math.isnan(value) else value


def plot(results: list[Figures], path: Path) -> None:
    """Draws the fire-lag distributions (one panel per lag scenario) as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = ("lag5000", "lag1000", "lag100")
    fig, axes = plt.subplots(1, len(labels), figsize=(18, 4.5))
    for axis, label in zip(axes, labels, strict=True):
        for r in results:
            lags = sorted(r.lags_ms.get(label, []))
            if lags:
                axis.plot(lags, [(i + 1) / len(lags) for i in range(len(lags))], label=r.system)
        axis.set_xscale("symlog", linthresh=1)
        axis.set_xlabel("arrival - due (ms)")
        axis.set_ylabel("fraction of jobs")
        titles = {"lag5000": "5,000 jobs", "lag1000": "1,000 jobs", "lag100": "100 jobs"}
        axis.set_title(f"{titles[label]} due over 1 s")
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
