"""Dollars per million one-attempt jobs on AWS, from a Hookline row's measured counts and prices.py.

Marginal costs, per job submitted alone (POST /v1/jobs) and delivered at the first attempt:
  API Gateway   one request, at the REST API's price or, with api_kind="Http", the HTTP API's
  submit λ      one request, billed for the local gateway's measured single-submit p50 at 512 MB (the
                template's Globals); the local stack's API is the only place the bench times a submit, and
                moto is slower than DynamoDB, so this overstates the duration rather than understates it
  DynamoDB      the row's WRU and RRU per job (counted by the in-memory meter, estimated for moto)
  fan-out λ     the row's measured fan-out executor invocations per job (the local stack's promoter starts
                them when the ready stream backs up), each a 90 s claiming window at 1024 MB
Fixed costs, per hour whatever the load, amortised over REFERENCE_JOBS_PER_MONTH:
  ElastiCache   two cache.t4g.small nodes (primary and replica, template.yaml)
  promote λ     256 MB, a 90 s invocation every 60 s: 1.5 running at any time
  execute λ     1024 MB, a 90 s claiming window every 60 s: 1.5 running (they outlast it only while a
                long callback is in flight)
  reap λ        256 MB, assumed 2 s every 60 s
  schedules     3 invocations a minute (λ requests)
  NAT gateway   one, hourly charge only
"""

from __future__ import annotations

from bench.compare import prices

REFERENCE_JOBS_PER_MONTH = 10_000_000
HOURS_PER_MONTH = 730
SUBMIT_MEMORY_GB = 0.5
DEFAULT_SUBMIT_MS = 20.0  # when no local-stack latency was measured in the run
FAN_OUT_GB_S = 1.0 * 90
# template.yaml's ApiKind values and the price of one request to each kind of API.
API_GATEWAY_PRICES = {"Rest": prices.API_GATEWAY_PER_REQUEST, "Http": prices.API_GATEWAY_HTTP_PER_REQUEST}


def fixed_per_hour() -> dict[str, float]:
    """Returns the hourly costs that do not depend on the number of jobs."""
    lambda_gb_s_per_s = 1.5 * 0.25 + 1.5 * 1.0 + 0.25 * 2 / 60
    return {
        "elasticache": 2 * prices.ELASTICACHE_NODE_HOUR,
        "lambda_schedules_gb_s": lambda_gb_s_per_s * 3600 * prices.LAMBDA_PER_GB_S,
        "lambda_schedules_requests": 3 * 60 * prices.LAMBDA_PER_REQUEST,
        "nat_gateway": prices.NAT_GATEWAY_HOUR,
    }


def marginal_per_million(
    values: dict[str, float], submit_ms: float, *, api_kind: str = "Rest"
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
    with batch_submit_ms also the marginal cost of submitting in batches of 100 (one API request each);
    API requests priced for api_kind (marginal_per_million)."""
    marginal = marginal_per_million(values, submit_ms, api_kind=api_kind)
    if not marginal:
        return {}
    fixed_month = sum(fixed_per_hour().values()) * HOURS_PER_MONTH
    fixed = fixed_month / (REFERENCE_JOBS_PER_MONTH / 1e6)
    priced = {
        **{f"usd_{name}": value for name, value in marginal.items()},
        "usd_marginal": sum(marginal.values()),
        "usd_fixed_at_reference": fixed,
        "usd_total_at_reference": sum(marginal.values()) + fixed,
    }
    if batch_submit_ms is not None:
        batched = marginal_per_million(values, batch_submit_ms, api_kind=api_kind)
        api = batched["api_gateway"] + batched["lambda_submit"]
        priced["usd_marginal_batched"] = sum(batched.values()) - api + api / 100
    return priced
