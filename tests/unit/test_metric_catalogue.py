"""One metric catalogue serves the drill file's expectations, their judging, calibrate, the baseline
and the bench: a metric registered from outside the product is read by all of them, and the
built-in metrics keep the facts each of them had."""

from __future__ import annotations

import pytest

from mirrordrill.harness.drill.baseline import DEFAULT_TOLERANCES, compare
from mirrordrill.harness.drill.metrics import METRICS, BenchColumn, CalibrateRule, Metric, register_metric, unregister_metric
from mirrordrill.harness.drill.schema import parse_expectation
from mirrordrill.harness.drill.summary import evaluate
from mirrordrill.harness.drill.validate import parse_scenario
from mirrordrill.harness.tools.bench.drills import figure_columns, figures
from mirrordrill.harness.tools.calibrate.limits import Calibration, calibrated, observe
from tests.unit.test_action_facts import DRILL as FAULT_DRILL
from tests.unit.test_calibrate import _summary

DELIVERED = Metric("delivered_share", "fraction", higher_is_better=True, calibrate=CalibrateRule(),
                   baseline="throughput", bench=BenchColumn("delivered_share", "delivered", 2, "worst"),
                   reader=lambda f: round(f.replicated / f.acked, 3) if f.acked else None)

# a small drill with no timeline, its expectations to follow
DRILL = FAULT_DRILL.replace("timeline:\n", "expectations:\n")


@pytest.fixture
def delivered():
    register_metric(DELIVERED)
    yield DELIVERED
    unregister_metric(DELIVERED.name)


def _flow(summary, replicated: int):
    flow = summary.flows[0].model_copy(update={"replicated": replicated})
    return summary.model_copy(update={"flows": [flow]})


def test_a_registered_metric_is_an_expectation_and_is_judged_by_its_reader(delivered):
    s = parse_scenario(DRILL + '  delivered_share: ">= 0.99"\n', "d.yaml")
    run = _flow(_summary(acked=1000), replicated=980)
    [row] = evaluate(s, run.flows, [])
    assert (row.name, row.actual, row.passed) == ("delivered_share[primary->dr] >= 0.99", 0.98, False)
    with pytest.raises(ValueError, match="a bare number is ambiguous for delivered_share, where more is better"):
        parse_expectation("delivered_share", 0.99)


def test_an_unregistered_metric_is_unknown_again(delivered):
    unregister_metric(DELIVERED.name)
    with pytest.raises(ValueError, match="expectation on unknown metric 'delivered_share'"):
        parse_expectation("delivered_share", ">= 0.99")
    register_metric(DELIVERED)  # the fixture's teardown takes it away again
    with pytest.raises(TypeError, match="'delivered_share' is registered already"):
        register_metric(DELIVERED)


def test_calibrate_the_baseline_and_the_bench_read_a_registered_metric(delivered):
    runs = [_flow(_summary(acked=1000), replicated=1000), _flow(_summary(acked=1000), replicated=990)]
    observed = {(o.kind.name, o.scope): o.values for o in observe(runs)}
    assert observed[("delivered_share", "primary->dr")] == [1.0, 0.99]
    assert 'delivered_share: ">= 0.49"' in Calibration("# calibrated by test", observe(runs), 0.5).expectations_yaml()
    rows = {(r.metric, r.scope): r for r in compare(runs[0], runs[1].flows, [], DEFAULT_TOLERANCES)}
    share = rows[("delivered_share", "primary->dr")]
    assert (share.op, share.limit, share.passed) == (">=", 0.8, True)  # the throughput tolerance: 20% less
    assert figures(runs[1])["delivered_share"] == 0.99
    assert list(figure_columns())[-1] == "delivered_share"


def test_the_built_in_metrics_keep_their_facts():
    def names(fact) -> set[str]:
        return {m.name for m in METRICS.values() if fact(m)}

    assert names(lambda m: m.higher_is_better) == {"acked", "replicated", "throughput_records_s", "throughput_mb_s",
                                                   "failback.history_records"}
    assert names(lambda m: m.count) == {"acked", "replicated", "lost", "duplicates", "reordered", "misplaced", "corrupted",
                                        "unexpected", "failover.skipped", "failover.reprocessed",
                                        "failover.rpo_records", "failback.missing", "failback.extra",
                                        "failback.history_records"}
    assert [m.name for m in calibrated("flow")] == [
        "lost", "duplicates", "reordered", "corrupted", "unexpected", "latency_ms.p50", "latency_ms.p90",
        "latency_ms.p99", "latency_ms.max", "stall_s", "acked", "throughput_records_s"]
    assert [m.name for m in calibrated("failover")] == [
        "failover.skipped", "failover.reprocessed", "failover.rto_s", "failover.rpo_records"]
    assert {m.name: m.baseline for m in METRICS.values() if m.baseline} == {
        "latency_ms.p50": "latency", "latency_ms.p90": "latency", "latency_ms.p99": "latency",
        "throughput_records_s": "throughput", "failover.reprocessed": "reprocessed", "failover.rto_s": "rto",
        "stall_s": "stall"}
    assert list(figure_columns()) == ["duplicates", "latency_p50_ms", "latency_p99_ms", "stall_s", "rto_s", "reprocessed",
                                      "first_start_s", "restart_s", "throughput_records_s"]
