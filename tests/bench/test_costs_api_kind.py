"""bench/compare/costs.py prices the API requests for either kind of API template.yaml's ApiKind deploys."""

from __future__ import annotations

import pytest

from bench.compare import costs, prices

ROW = {"dynamodb_wru_per_job": 6.0, "dynamodb_rru_per_job": 2.0, "lambda_fan_out_invocations_per_job": 0.001}


def test_given_api_kind_when_pricing_then_only_the_api_gateway_item_differs() -> None:
    rest = costs.marginal_per_million(ROW, 9.0)
    http = costs.marginal_per_million(ROW, 9.0, api_kind="Http")

    assert rest == costs.marginal_per_million(ROW, 9.0, api_kind="Rest")
    assert rest["api_gateway"] == pytest.approx(3.50)
    assert http["api_gateway"] == pytest.approx(1.00)
    assert {k: v for k, v in rest.items() if k != "api_gateway"} == {
        k: v for k, v in http.items() if k != "api_gateway"
    }


def test_given_http_api_when_totalled_then_2_50_less_per_million_single_submits_and_batches_too() -> None:
    rest = costs.per_million(ROW, 9.0, batch_submit_ms=150.0)
    http = costs.per_million(ROW, 9.0, batch_submit_ms=150.0, api_kind="Http")
    saving = 1e6 * (prices.API_GATEWAY_PER_REQUEST - prices.API_GATEWAY_HTTP_PER_REQUEST)

    assert rest["usd_marginal"] - http["usd_marginal"] == pytest.approx(saving)
    assert rest["usd_marginal_batched"] - http["usd_marginal_batched"] == pytest.approx(saving / 100)
    assert rest["usd_fixed_at_reference"] == http["usd_fixed_at_reference"]


def test_given_unknown_api_kind_then_value_error() -> None:
    with pytest.raises(ValueError, match="api_kind"):
        costs.marginal_per_million(ROW, 9.0, api_kind="Rest API")
