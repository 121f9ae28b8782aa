"""The cost model (bench/compare/costs.py): its documented configurations deploy, docs/capacity.md shows its
output, and its totals add up (idle is the total at no jobs; a volume only adds)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.compare import costs, prices, report
from hookline_local.conditions import parameter_values, resolve
from hookline_local.template import find_template, load_template

TEMPLATE = load_template(find_template())


@pytest.fixture(scope="module")
def figures() -> costs.MeterFigures:
    return costs.load_figures()


def test_given_docs_page_then_its_cost_tables_are_the_models_output(figures: costs.MeterFigures) -> None:
    page = costs.DOCS.read_text(encoding="utf-8")

    assert costs.with_tables(page, costs.docs_tables(figures)) == page, (
        "docs/capacity.md is stale: run `python -m bench.compare.costs --write-docs`"
    )


@pytest.mark.parametrize("configuration", costs.CONFIGURATIONS, ids=lambda c: c.name)
def test_given_documented_configuration_then_the_template_takes_its_parameters(
    configuration: costs.Configuration,
) -> None:
    values = parameter_values(TEMPLATE, configuration.parameters())

    assert {name: values[name] for name in configuration.parameters()} == configuration.parameters()


@pytest.mark.parametrize("configuration", costs.CONFIGURATIONS, ids=lambda c: c.name)
def test_given_configuration_then_idle_is_the_total_at_no_jobs_and_volume_only_adds(
    configuration: costs.Configuration, figures: costs.MeterFigures
) -> None:
    idle = costs.usd_idle_per_month(configuration)
    totals = [costs.monthly_usd(configuration, jobs, figures) for jobs in costs.VOLUMES]

    assert costs.monthly_usd(configuration, 0, figures) == pytest.approx(idle)
    assert totals == sorted(totals) and totals[0] == pytest.approx(idle)
    assert costs.monthly_usd(configuration, 10**7, figures, batched=True) < totals[2]


def test_given_cheaper_choices_then_each_costs_less_idle_than_the_default() -> None:
    by_name = {c.name: costs.usd_idle_per_month(c) for c in costs.CONFIGURATIONS}
    items = costs.idle_items(costs.DEFAULT)

    assert by_name["small"] < by_name["default"] and by_name["serverless"] < by_name["small"]
    assert by_name["small-private"] == pytest.approx(
        by_name["small"] - costs.idle_items(costs.CONFIGURATIONS[1])["egress"]
    )
    # Two cache.t4g.small nodes and the NAT gateway with its address, whatever the volume.
    assert items["cache"] == pytest.approx(2 * 0.032 * 730)
    assert items["egress"] == pytest.approx((0.045 + 0.005) * 730)


def test_given_provisioned_tables_then_a_steady_volume_costs_less_than_on_demand(
    figures: costs.MeterFigures,
) -> None:
    on_demand = costs.Configuration("x", "on demand", cache_kind="Serverless", egress="None")
    provisioned = costs.Configuration(
        "y", "provisioned", cache_kind="Serverless", egress="None", table_billing="Provisioned",
        write_capacity=(1, 400),
    )  # fmt: skip

    assert costs.usd_idle_per_month(provisioned) > costs.usd_idle_per_month(on_demand)
    assert costs.monthly_usd(provisioned, 10**7, figures) < costs.monthly_usd(on_demand, 10**7, figures)


def test_given_volume_above_the_provisioned_maximum_then_the_model_refuses_to_price_it(
    figures: costs.MeterFigures,
) -> None:
    capped = costs.Configuration("z", "capped", table_billing="Provisioned", write_capacity=(1, 10))

    with pytest.raises(ValueError, match=r"jobs writes needs \d+ capacity units, above its maximum 10"):
        costs.monthly_usd(capped, 10**8, figures)


def test_given_template_then_the_models_alarm_and_dashboard_counts_are_its_own() -> None:
    deployed = resolve(TEMPLATE, costs.DEFAULT.parameters())["Resources"].values()

    assert sum(r["Type"] == "AWS::CloudWatch::Alarm" for r in deployed) == costs.TEMPLATE_ALARMS
    assert sum(r["Type"] == "AWS::CloudWatch::Dashboard" for r in deployed) == costs.TEMPLATE_DASHBOARDS


def test_given_bench_row_then_it_carries_the_idle_month_beside_the_marginal_cost(
    figures: costs.MeterFigures,
) -> None:
    priced = costs.per_million(dict(figures.values), figures.submit_ms, figures.batch_submit_ms)

    assert priced["usd_idle_per_month"] == pytest.approx(costs.usd_idle_per_month(costs.DEFAULT))
    assert priced["usd_marginal"] > priced["usd_marginal_batched"] > 0


def test_given_report_notes_then_they_list_the_managed_services_prices_and_sources() -> None:
    line = report.managed_prices()

    for name, usd, _counted, source in prices.MANAGED_SERVICES:
        assert f"{name} ${usd:.2f}/M" in line and source in line
    assert prices.PRICES_WRITTEN in line


def test_given_results_without_priced_rows_then_loading_says_so(tmp_path: Path) -> None:
    path = tmp_path / "compare.json"
    path.write_text(json.dumps({"results": [{"system": "celery", "values": {}}]}))

    with pytest.raises(ValueError, match="no row with DynamoDB figures"):
        costs.load_figures(path)


def test_given_jobs_then_the_functions_are_awake_up_to_all_month_and_smaller_executors_cost_less(
    figures: costs.MeterFigures,
) -> None:
    def awake(configuration: costs.Configuration, jobs: int) -> float:
        return costs.monthly_items(configuration, jobs, figures)["lambda_awake"]

    half = costs.Configuration("h", "512 MB executors", execute_memory_mb=512)

    assert awake(costs.DEFAULT, 0) == 0
    # 10,000 evenly spread jobs keep the functions awake a third of the month; a million, all of it.
    assert 0 < awake(costs.DEFAULT, 10_000) < awake(costs.DEFAULT, 10**6)
    assert awake(costs.DEFAULT, 10**6) == pytest.approx(awake(costs.DEFAULT, 10**8))
    assert awake(half, 10**7) < awake(costs.DEFAULT, 10**7)
    assert half.parameters()["ExecuteMemorySize"] == "512"
    assert "ExecuteMemorySize" not in costs.DEFAULT.parameters()
