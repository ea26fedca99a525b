"""Expectations read as limits, the way pytest and Locust users write them, and shown with the
operator that was applied."""

import pytest

from mirrordrill.harness.drill.metrics import METRICS
from mirrordrill.harness.drill.schema import parse_expectation
from mirrordrill.harness.drill.summary import evaluate
from mirrordrill.harness.drill.validate import parse_scenario
from tests.unit.test_scenario_validation import BASE


@pytest.mark.parametrize("key,value,op,limit", [
    ("failover.rto_s", 30, "<=", 30),           # a bare number is a ceiling
    ("latency_ms.p99", 2000, "<=", 2000),
    ("duplicates", 5, "<=", 5),
    ("lost", 0, "==", 0),                        # zero stays exact (the same, for a count)
    ("latency_ms.p99", "<= 2000", "<=", 2000),   # written operators are kept
    ("throughput_records_s", ">= 1000", ">=", 1000),
    ("acked", "== 3000", "==", 3000),
])
def test_a_bare_number_is_a_ceiling(key, value, op, limit):
    e = parse_expectation(key, value)
    assert (e.op, e.limit) == (op, limit)
    assert e.name == f"{key} {op} {limit:g}"


@pytest.mark.parametrize("metric", [m.name for m in METRICS.values() if m.higher_is_better])
def test_a_bare_number_where_more_is_better_is_refused(metric):
    with pytest.raises(ValueError, match=r"write '>= 10' \(at least\) or '<= 10' \(at most\)"):
        parse_expectation(metric, 10)


@pytest.mark.parametrize("value,phrase", [("<= -1", "never holds"), (">= -1", "always holds"),
                                          ("== 0.5", "whole number")])
def test_limits_that_cannot_mean_anything(value, phrase):
    with pytest.raises(ValueError, match=phrase):
        parse_expectation("lost", value)


def test_the_row_names_the_operator_applied():
    s = parse_scenario(BASE + "expectations:\n  duplicates: 5\n  lost: 0\n", "drill.yaml")
    flow = _Flow()
    rows = {r.name: r for r in evaluate(s, [flow], [])}
    assert set(rows) == {"duplicates[primary->dr] <= 5", "lost[primary->dr] == 0"}
    assert rows["duplicates[primary->dr] <= 5"].passed and rows["duplicates[primary->dr] <= 5"].op == "<="


class _Flow:
    """What ``evaluate`` reads of a flow's summary."""

    name, source, target = "primary->dr", "primary", "dr"

    def model_dump(self, by_alias: bool = False) -> dict:
        return {"lost": 0, "duplicates": 3}
