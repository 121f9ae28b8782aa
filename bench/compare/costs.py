"""Dollars for Hookline on AWS: per million jobs from a bench row's measured counts, and per month for each
documented template configuration, idle and at a volume. Prices come from prices.py.

Marginal costs, per job submitted alone (POST /v1/jobs) and delivered at the first attempt:
  API Gateway   one request, at the REST API's price or, with api_kind="Http", the HTTP API's
  submit λ      one request, billed for the local gateway's measured single-submit p50 at 512 MB (the
                template's Globals); the local stack's API is the only place the bench times a submit, and
                moto is slower than DynamoDB, so this overstates the duration rather than understates it
  DynamoDB      the row's WRU and RRU per job (counted by the in-memory meter, estimated for moto); with
                TableBilling=Provisioned, the capacity that carries them at the 70 % scaling target
  fan-out λ     the row's measured fan-out executor invocations per job (the local stack's promoter starts
                them when the ready stream backs up), each a 90 s claiming window at 1024 MB
  NAT gateway   CALLBACK_BYTES_THROUGH_NAT per job processed (Egress=NatGateway only)
  serverless    the row's Redis commands per job, ECPU_PER_REDIS_COMMAND ECPUs each (CacheKind=Serverless)
Idle costs, per month whatever the load (usd_idle_per_month):
  cache         the configuration's nodes (node-hours), or the serverless cache's minimum data stored and
                the idle functions' commands
  egress        the NAT gateway and its address, or the NAT instance, its address, root volume and alarm
  DynamoDB      the idle functions' reads on demand, or every table's and the index's minimum capacity
  λ             the scheduled functions' idle duration and requests (LAMBDA_IDLE_*)
  CloudWatch    the template's alarms and dashboard

Figures that depend on how the functions idle (LAMBDA_IDLE_GB_S_PER_MONTH, LAMBDA_IDLE_REQUESTS_PER_MONTH,
IDLE_REDIS_COMMANDS_PER_S, IDLE_DYNAMODB_RRU_PER_S) are named constants, to be updated when that changes.

`python -m bench.compare.costs` prints the configurations' monthly dollars; `--write-docs` writes them
into docs/capacity.md between the markers (tests/bench/test_costs.py checks the page against the model).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.compare import prices

REFERENCE_JOBS_PER_MONTH = 10_000_000
HOURS_PER_MONTH = 730
SECONDS_PER_MONTH = HOURS_PER_MONTH * 3600
SUBMIT_MEMORY_GB = 0.5
DEFAULT_SUBMIT_MS = 20.0  # when no local-stack latency was measured in the run
FAN_OUT_GB_S = 1.0 * 90
# template.yaml's ApiKind values and the price of one request to each kind of API.
API_GATEWAY_PRICES = {"Rest": prices.API_GATEWAY_PER_REQUEST, "Http": prices.API_GATEWAY_HTTP_PER_REQUEST}
BATCH_SIZE = 100

# The functions' duration in GB-s a second while work flows, less the executor's: a promote invocation of
# 256 MB runs 90 s every 60 s (1.5 at any time) and the reaper's 256 MB all minute. An executor
# (ExecuteMemorySize, LAMBDA_AWAKE_EXECUTORS of them) claims for 90 s and the promoter starts the next
# while the streams hold work: about one at any time below the fan-out's backlog threshold.
LAMBDA_AWAKE_GB_S_PER_S = 1.5 * 0.25 + 0.25
LAMBDA_AWAKE_EXECUTORS = 1.0
# The same with no work (idle mode, docs/timing.md): per minute a short promote invocation and the
# reaper's pass, each ending when nothing is due within the horizon and nothing waits
# (LAMBDA_IDLE_GB_S_PER_MIN, measured by bench/idle_mode.py, docs/capacity.md); two schedule invocations
# a minute. Lambda's free tier is left out.
LAMBDA_IDLE_GB_S_PER_MIN = 1.3
LAMBDA_IDLE_GB_S_PER_MONTH = LAMBDA_IDLE_GB_S_PER_MIN * 60 * HOURS_PER_MONTH
LAMBDA_IDLE_REQUESTS_PER_MONTH = 2 * 60 * HOURS_PER_MONTH
# How long one job keeps the functions awake at most: a promoter stays while anything is due within its
# idle horizon (75 s) and its grace (2 s), an executor until it has read nothing for 10 s. Jobs spread
# evenly over the month keep them awake for min(1, jobs x this / month) of it (an upper bound: nearby
# jobs share the time).
LAMBDA_AWAKE_S_PER_JOB = 87.0

# Commands the idle functions send Redis each second, averaged over a minute in which the promoter and the
# reaper each run a few seconds (idle mode) and no executor runs: an estimate, not a count; it matters only
# on a serverless cache, where each is billed.
IDLE_REDIS_COMMANDS_PER_S = 2.0
# Read units the idle functions use each second (the reaper's pass a minute: the unindexed-jobs note and
# the due scan's empty pages): an estimate.
IDLE_DYNAMODB_RRU_PER_S = 0.05

# ECPUs per Redis command on a serverless cache: simple commands on small values are 1; Hookline's Lua
# scripts (index, promote, claim) use more vCPU time, so 2 on average is assumed, not measured.
ECPU_PER_REDIS_COMMAND = 2.0
# Bytes a callback sends and receives through NAT: request with headers and body, response, TLS handshake.
CALLBACK_BYTES_THROUGH_NAT = 8_000
# The template's alarms and dashboards, whatever the configuration (the NAT instance's alarm is counted
# with it); tests/bench/test_costs.py counts them in template.yaml.
TEMPLATE_ALARMS = 7
TEMPLATE_DASHBOARDS = 1
NAT_INSTANCE_ROOT_GB = 8  # Amazon Linux 2023's image
# Application Auto Scaling keeps consumed capacity at this share of what is provisioned.
TABLE_SCALING_TARGET = 0.70
# Of the tables' write units per one-attempt job, the jobs table's share: the first attempt is recorded in
# the job item, so the executions table is written only from a second attempt on (docs/capacity.md).
JOBS_TABLE_SHARE_OF_TABLE_WRU = 1.0

RESULTS = Path(__file__).resolve().parents[1] / "results" / "cost" / "compare.json"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "capacity.md"
DOCS_START = "<!-- cost-model:start (python -m bench.compare.costs --write-docs) -->"
DOCS_END = "<!-- cost-model:end -->"
VOLUMES = (0, 1_000_000, 10_000_000, 100_000_000)


@dataclass(frozen=True)
class Configuration:
    """One way to deploy template.yaml, as far as cost goes: its cache, its egress and its tables' billing.

    Attributes:
        name: Short name, used in docs/capacity.md and docs/deploying.md.
        summary: What it is for, in a few words.
        cache_kind: CacheKind: "Replicated", "SingleNode" or "Serverless".
        cache_node: RedisNodeType (a node kind), unused by a serverless cache.
        serverless_engine: ServerlessEngine, "valkey" or "redis" (a serverless cache).
        egress: Egress: "NatGateway", "NatInstance" or "None".
        nat_instance_type: NatInstanceType (Egress=NatInstance).
        table_billing: TableBilling: "OnDemand" or "Provisioned".
        read_capacity: TableReadCapacityMin and Max (Provisioned).
        write_capacity: TableWriteCapacityMin and Max (Provisioned).
        api_kind: ApiKind: "Rest" or "Http" (the API requests' price).
        execute_memory_mb: ExecuteMemorySize (the executors' GB-s while work flows).
    """

    name: str
    summary: str
    cache_kind: str = "Replicated"
    cache_node: str = "cache.t4g.small"
    serverless_engine: str = "valkey"
    egress: str = "NatGateway"
    nat_instance_type: str = "t4g.nano"
    table_billing: str = "OnDemand"
    read_capacity: tuple[int, int] = (1, 100)
    write_capacity: tuple[int, int] = (1, 100)
    api_kind: str = "Rest"
    execute_memory_mb: int = 1024

    @property
    def cache_nodes(self) -> int:
        """Returns the cache nodes billed by the hour (cluster mode off: a primary, and a replica)."""
        return {"Replicated": 2, "SingleNode": 1, "Serverless": 0}[self.cache_kind]

    def parameters(self) -> dict[str, str]:
        """Returns the template parameter overrides that deploy this configuration."""
        chosen = {
            "CacheKind": self.cache_kind,
            "Egress": self.egress,
            "TableBilling": self.table_billing,
        }
        if self.cache_kind == "Serverless":
            chosen["ServerlessEngine"] = self.serverless_engine
        else:
            chosen["RedisNodeType"] = self.cache_node
        if self.egress == "NatInstance":
            chosen["NatInstanceType"] = self.nat_instance_type
        if self.api_kind != "Rest":
            chosen["ApiKind"] = self.api_kind
        if self.execute_memory_mb != 1024:
            chosen["ExecuteMemorySize"] = str(self.execute_memory_mb)
        if self.table_billing == "Provisioned":
            chosen["TableReadCapacityMin"], chosen["TableReadCapacityMax"] = map(str, self.read_capacity)
            chosen["TableWriteCapacityMin"], chosen["TableWriteCapacityMax"] = map(str, self.write_capacity)
        return chosen

    def describe(self) -> str:
        """Returns the configuration as `sam deploy --parameter-overrides` arguments."""
        return " ".join(f"{name}={value}" for name, value in self.parameters().items())


DEFAULT = Configuration("default", "the template's defaults: replicated cache, NAT gateway")
CONFIGURATIONS = (
    DEFAULT,
    Configuration(
        "small",
        "one micro cache node, a NAT instance",
        cache_kind="SingleNode",
        cache_node="cache.t4g.micro",
        egress="NatInstance",
    ),
    Configuration(
        "small-private",
        "one micro cache node, egress left to your network",
        cache_kind="SingleNode",
        cache_node="cache.t4g.micro",
        egress="None",
    ),
    Configuration(
        "serverless",
        "ElastiCache Serverless (valkey), a NAT instance",
        cache_kind="Serverless",
        egress="NatInstance",
    ),
    Configuration(
        "serverless-steady",
        "ElastiCache Serverless (valkey), a NAT instance, provisioned tables",
        cache_kind="Serverless",
        egress="NatInstance",
        table_billing="Provisioned",
        read_capacity=(1, 100),
        write_capacity=(1, 400),
    ),
    Configuration(
        "lean",
        "ElastiCache Serverless (valkey), egress left to your network, the HTTP API, 512 MB executors",
        cache_kind="Serverless",
        egress="None",
        api_kind="Http",
        execute_memory_mb=512,
    ),
    Configuration(
        "lean-steady",
        "lean with provisioned tables",
        cache_kind="Serverless",
        egress="None",
        api_kind="Http",
        execute_memory_mb=512,
        table_billing="Provisioned",
        read_capacity=(1, 100),
        write_capacity=(1, 400),
    ),
)


@dataclass(frozen=True)
class MeterFigures:
    """A Hookline bench row's per-job counts (make bench's metered store) and submit timings."""

    system: str
    values: Mapping[str, float]
    submit_ms: float
    batch_submit_ms: float | None


def load_figures(path: Path = RESULTS) -> MeterFigures:
    """Returns the Hookline row of a bench run (compare.json) that timed submits, else the first priced."""
    rows = json.loads(path.read_text(encoding="utf-8"))["results"]
    priced = [r for r in rows if (r["values"].get("dynamodb_wru_per_job") is not None)]
    if not priced:
        raise ValueError(f"{path} has no row with DynamoDB figures")
    timed = [r for r in priced if r["values"].get("submit_single_p50_ms") is not None]
    row = (timed or priced)[0]
    values = {name: value for name, value in row["values"].items() if value is not None}
    return MeterFigures(
        system=row["system"],
        values=values,
        submit_ms=values.get("submit_single_p50_ms", DEFAULT_SUBMIT_MS),
        batch_submit_ms=values.get("submit_batch_p50_ms"),
    )


def _per_month(hourly: float) -> float:
    return hourly * HOURS_PER_MONTH


def _cache_usd(configuration: Configuration, redis_commands_per_month: float) -> float:
    if configuration.cache_kind != "Serverless":
        hourly = prices.ELASTICACHE_NODE_HOUR_BY_TYPE[configuration.cache_node]
        return configuration.cache_nodes * _per_month(hourly)
    engine = configuration.serverless_engine
    storage = _per_month(prices.SERVERLESS_MIN_GB[engine] * prices.SERVERLESS_PER_GB_HOUR[engine])
    commands = redis_commands_per_month + IDLE_REDIS_COMMANDS_PER_S * SECONDS_PER_MONTH
    return storage + commands * ECPU_PER_REDIS_COMMAND * prices.SERVERLESS_PER_ECPU[engine]


def _egress_usd(configuration: Configuration, jobs: float) -> float:
    if configuration.egress == "NatGateway":
        processed_gb = jobs * CALLBACK_BYTES_THROUGH_NAT / 1e9
        return (
            _per_month(prices.NAT_GATEWAY_HOUR + prices.PUBLIC_IPV4_HOUR)
            + processed_gb * prices.NAT_GATEWAY_PER_GB
        )
    if configuration.egress == "NatInstance":
        return (
            _per_month(prices.EC2_HOUR_BY_TYPE[configuration.nat_instance_type] + prices.PUBLIC_IPV4_HOUR)
            + NAT_INSTANCE_ROOT_GB * prices.EBS_GP3_PER_GB_MONTH
            + prices.CLOUDWATCH_ALARM_MONTH
        )
    return 0.0


def _provisioned_units(rate_per_s: float, capacity: tuple[int, int], name: str) -> float:
    """Returns the capacity units auto scaling keeps for a steady rate: the rate at the target, or the floor.

    Raises ValueError when that is above the maximum: the table would throttle, not cost that.
    """
    minimum, maximum = capacity
    units = max(float(minimum), rate_per_s / TABLE_SCALING_TARGET)
    if units > maximum:
        raise ValueError(f"{name} needs {units:.0f} capacity units, above its maximum {maximum}")
    return units


def _dynamodb_usd(configuration: Configuration, jobs: float, values: Mapping[str, float]) -> float:
    """Returns a month of DynamoDB for jobs spread evenly over it (a burst needs more provisioned units)."""
    table_wru = values["dynamodb_wru_per_job"] * jobs
    index_wru = values.get("dynamodb_index_wru_per_job", 0.0) * jobs
    rru = values["dynamodb_rru_per_job"] * jobs + IDLE_DYNAMODB_RRU_PER_S * SECONDS_PER_MONTH
    if configuration.table_billing == "OnDemand":
        return (table_wru + index_wru) * prices.DYNAMODB_PER_WRU + rru * prices.DYNAMODB_PER_RRU
    # Per capacity holder (jobs table, live index, executions table, keys table): write and read units a
    # second; the reads are few, and all counted on one holder.
    writes = {
        "jobs": table_wru * JOBS_TABLE_SHARE_OF_TABLE_WRU,
        "live": index_wru,
        "executions": table_wru * (1 - JOBS_TABLE_SHARE_OF_TABLE_WRU),
        "keys": 0.0,
    }
    reads = {"jobs": 0.0, "live": 0.0, "executions": 0.0, "keys": rru}
    wcu = sum(
        _provisioned_units(units / SECONDS_PER_MONTH, configuration.write_capacity, f"{name} writes")
        for name, units in writes.items()
    )
    rcu = sum(
        _provisioned_units(units / SECONDS_PER_MONTH, configuration.read_capacity, f"{name} reads")
        for name, units in reads.items()
    )
    return _per_month(wcu * prices.DYNAMODB_PER_WCU_HOUR + rcu * prices.DYNAMODB_PER_RCU_HOUR)


def awake_gb_s_per_s(configuration: Configuration) -> float:
    """Returns the functions' GB-s a second while work flows, in the configuration."""
    return LAMBDA_AWAKE_GB_S_PER_S + LAMBDA_AWAKE_EXECUTORS * configuration.execute_memory_mb / 1024


def _awake_usd(configuration: Configuration, jobs_per_month: float) -> float:
    """Returns the functions' duration beyond their idle duration while jobs keep them awake."""
    awake = min(1.0, jobs_per_month * LAMBDA_AWAKE_S_PER_JOB / SECONDS_PER_MONTH)
    extra_gb_s_per_s = max(0.0, awake_gb_s_per_s(configuration) - LAMBDA_IDLE_GB_S_PER_MIN / 60)
    return awake * extra_gb_s_per_s * SECONDS_PER_MONTH * prices.LAMBDA_PER_GB_S


def _idle_figures() -> dict[str, float]:
    """Per-job figures of no job: only the idle functions' own use remains."""
    return {"dynamodb_wru_per_job": 0.0, "dynamodb_index_wru_per_job": 0.0, "dynamodb_rru_per_job": 0.0}


def monthly_items(
    configuration: Configuration, jobs_per_month: float, figures: MeterFigures | None, batched: bool = False
) -> dict[str, float]:
    """Returns a month's dollars by item for jobs_per_month one-attempt jobs (spread evenly over the
    month), submitted one per request or, batched, BATCH_SIZE per request. figures may be None only for
    no jobs."""
    if jobs_per_month and figures is None:
        raise ValueError("figures are needed to price jobs")
    values = figures.values if figures is not None and jobs_per_month else _idle_figures()
    items = {
        "cache": _cache_usd(configuration, jobs_per_month * values.get("redis_commands_per_job", 0.0)),
        "egress": _egress_usd(configuration, jobs_per_month),
        "dynamodb": _dynamodb_usd(configuration, jobs_per_month, values),
        "lambda_idle": LAMBDA_IDLE_GB_S_PER_MONTH * prices.LAMBDA_PER_GB_S
        + LAMBDA_IDLE_REQUESTS_PER_MONTH * prices.LAMBDA_PER_REQUEST,
        "lambda_awake": _awake_usd(configuration, jobs_per_month),
        "cloudwatch": TEMPLATE_ALARMS * prices.CLOUDWATCH_ALARM_MONTH
        + TEMPLATE_DASHBOARDS * prices.CLOUDWATCH_DASHBOARD_MONTH,
        "api_and_submit": 0.0,
        "lambda_fan_out": 0.0,
    }
    if jobs_per_month and figures is not None:
        millions = jobs_per_month / 1e6
        single = marginal_per_million(figures.values, figures.submit_ms, api_kind=configuration.api_kind)
        api = single["api_gateway"] + single["lambda_submit"]
        if batched:
            batch_ms = figures.batch_submit_ms if figures.batch_submit_ms is not None else figures.submit_ms
            in_batches = marginal_per_million(figures.values, batch_ms, api_kind=configuration.api_kind)
            api = (in_batches["api_gateway"] + in_batches["lambda_submit"]) / BATCH_SIZE
        items["api_and_submit"] = api * millions
        items["lambda_fan_out"] = single["lambda_fan_out"] * millions
    return items


def monthly_usd(
    configuration: Configuration, jobs_per_month: float, figures: MeterFigures | None, batched: bool = False
) -> float:
    """Returns a month's dollars for jobs_per_month one-attempt jobs (monthly_items, summed)."""
    return sum(monthly_items(configuration, jobs_per_month, figures, batched).values())


def idle_items(configuration: Configuration) -> dict[str, float]:
    """Returns a month's dollars by item with no jobs at all (the items that are not zero)."""
    return {name: usd for name, usd in monthly_items(configuration, 0, None).items() if usd}


def usd_idle_per_month(configuration: Configuration = DEFAULT) -> float:
    """Returns what the configuration costs a month with no jobs at all."""
    return sum(idle_items(configuration).values())


def fixed_per_hour() -> dict[str, float]:
    """Returns the default configuration's hourly costs that do not depend on the number of jobs."""
    return {name: usd / HOURS_PER_MONTH for name, usd in idle_items(DEFAULT).items()}


def marginal_per_million(
    values: Mapping[str, float], submit_ms: float, *, api_kind: str = "Rest"
) -> dict[str, float]:
    """Returns the per-million-jobs costs of one row, by item (empty without DynamoDB figures), with the
    API requests priced for api_kind ("Rest" or "Http", template.yaml's ApiKind).

    Raises:
        ValueError: api_kind is neither.
    """
    if api_kind not in API_GATEWAY_PRICES:
        raise ValueError(f"api_kind must be one of {sorted(API_GATEWAY_PRICES)}, not {api_kind!r}")
    if "dynamodb_wru_per_job" not in values:
        return {}
    million = 1e6
    fan_out = values.get("lambda_fan_out_invocations_per_job", 0.0)
    return {
        "api_gateway": million * API_GATEWAY_PRICES[api_kind],
        "lambda_submit": million
        * (prices.LAMBDA_PER_REQUEST + SUBMIT_MEMORY_GB * submit_ms / 1000 * prices.LAMBDA_PER_GB_S),
        "dynamodb": million
        * (
            (values["dynamodb_wru_per_job"] + values.get("dynamodb_index_wru_per_job", 0.0))
            * prices.DYNAMODB_PER_WRU
            + values["dynamodb_rru_per_job"] * prices.DYNAMODB_PER_RRU
        ),
        "lambda_fan_out": million
        * fan_out
        * (prices.LAMBDA_PER_REQUEST + FAN_OUT_GB_S * prices.LAMBDA_PER_GB_S),
    }


def per_million(
    values: dict[str, float],
    submit_ms: float,
    batch_submit_ms: float | None = None,
    *,
    api_kind: str = "Rest",
) -> dict[str, float]:
    """Returns a row's $ per million jobs: marginal, fixed amortised at the reference volume, and total;
    the default configuration's idle $ a month beside them; with batch_submit_ms also the marginal cost of
    submitting in batches of 100 (one API request each); API requests priced for api_kind
    (marginal_per_million)."""
    marginal = marginal_per_million(values, submit_ms, api_kind=api_kind)
    if not marginal:
        return {}
    fixed_month = usd_idle_per_month(DEFAULT)
    fixed = fixed_month / (REFERENCE_JOBS_PER_MONTH / 1e6)
    priced = {
        **{f"usd_{name}": value for name, value in marginal.items()},
        "usd_marginal": sum(marginal.values()),
        "usd_idle_per_month": fixed_month,
        "usd_fixed_at_reference": fixed,
        "usd_total_at_reference": sum(marginal.values()) + fixed,
    }
    if batch_submit_ms is not None:
        batched = marginal_per_million(values, batch_submit_ms, api_kind=api_kind)
        api = batched["api_gateway"] + batched["lambda_submit"]
        priced["usd_marginal_batched"] = sum(batched.values()) - api + api / BATCH_SIZE
    return priced


def _usd(value: float) -> str:
    return f"${value:,.2f}" if value < 100 else f"${value:,.0f}"


def _volume(jobs: int) -> str:
    return "idle" if not jobs else f"{jobs // 1_000_000} M"


def docs_tables(figures: MeterFigures, configurations: Sequence[Configuration] = CONFIGURATIONS) -> str:
    """Returns the Markdown that docs/capacity.md holds between its cost-model markers."""
    items = ("cache", "egress", "dynamodb", "lambda_idle", "cloudwatch")
    idle = [
        "| configuration | parameters | " + " | ".join(items) + " | idle $/month |",
        "|---|---|" + "---:|" * (len(items) + 1),
    ]
    for c in configurations:
        breakdown = monthly_items(c, 0, None)
        cells = " | ".join(_usd(breakdown[item]) for item in items)
        idle.append(f"| `{c.name}` | `{c.describe()}` | {cells} | **{_usd(usd_idle_per_month(c))}** |")
    volumes = [v for v in VOLUMES if v]
    header = " | ".join(f"{_volume(v)} jobs" for v in volumes)
    totals = [
        f"| configuration | idle | {header} | {header.replace(' jobs', ' jobs, batched')} |",
        "|---|" + "---:|" * (1 + 2 * len(volumes)),
    ]
    for c in configurations:
        single = [_usd(monthly_usd(c, v, figures)) for v in volumes]
        batched = [_usd(monthly_usd(c, v, figures, batched=True)) for v in volumes]
        totals.append(f"| `{c.name}` | {_usd(usd_idle_per_month(c))} | {' | '.join([*single, *batched])} |")
    source = (
        f"Per-job figures: the `{figures.system}` row of `bench/results/cost/compare.json`; prices: "
        f"`bench/compare/prices.py` ({prices.REGION}, written {prices.PRICES_WRITTEN}). Idle λ: "
        f"{LAMBDA_IDLE_GB_S_PER_MONTH:,.0f} GB-s and {LAMBDA_IDLE_REQUESTS_PER_MONTH:,} requests a month "
        f"(`LAMBDA_IDLE_GB_S_PER_MONTH`, `LAMBDA_IDLE_REQUESTS_PER_MONTH`); with jobs, the functions awake "
        f"{LAMBDA_AWAKE_GB_S_PER_S:.3f} GB-s a second and {LAMBDA_AWAKE_EXECUTORS:.0f} executor at its "
        f"`ExecuteMemorySize`, for up to {LAMBDA_AWAKE_S_PER_JOB:.0f} s a job (`LAMBDA_AWAKE_GB_S_PER_S`, "
        "`LAMBDA_AWAKE_EXECUTORS`, `LAMBDA_AWAKE_S_PER_JOB`)."
    )
    return (
        "Idle, by item ($ a month):\n\n" + "\n".join(idle) + "\n\n"
        "Monthly totals ($) at a volume of one-attempt jobs spread evenly over the month, submitted one per "
        f"request, then in batches of {BATCH_SIZE}:\n\n" + "\n".join(totals) + "\n\n" + source
    )


def with_tables(page: str, tables: str) -> str:
    """Returns the page with the text between its cost-model markers replaced by tables."""
    start, end = page.find(DOCS_START), page.find(DOCS_END)
    if start < 0 or end < start:
        raise ValueError(f"the page lacks the markers {DOCS_START!r} ... {DOCS_END!r}")
    return page[: start + len(DOCS_START)] + "\n\n" + tables + "\n\n" + page[end:]


def main(argv: Sequence[str] | None = None) -> int:
    """Prints every documented configuration's monthly dollars; --write-docs also updates docs/capacity.md."""
    parser = argparse.ArgumentParser(prog="python -m bench.compare.costs", description=main.__doc__)
    parser.add_argument("--write-docs", action="store_true", help=f"rewrite the tables in {DOCS.name}")
    parser.add_argument("--results", type=Path, default=RESULTS, help="a bench run's compare.json")
    args = parser.parse_args(argv)
    tables = docs_tables(load_figures(args.results))
    print(tables)
    if args.write_docs:
        DOCS.write_text(with_tables(DOCS.read_text(encoding="utf-8"), tables), encoding="utf-8")
        print(f"\nwrote {DOCS}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
