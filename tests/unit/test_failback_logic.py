"""Pure logic of failback: the record-by-record comparison and its expectations."""

from harness.results import FailbackSummary
from harness.scenario.failback import _difference
from harness.scenario.summary import evaluate
from harness.scenario.validate import parse_scenario


def test_difference_counts_records_missing_per_partition_with_repeats():
    new = {("orders", 0): [b"a", b"b", b"b"], ("orders", 1): [b"c"]}
    old = {("orders", 0): [b"a", b"b"], ("orders", 1): []}
    assert _difference(new, old) == 2  # one of the two b's, and c
    assert _difference(old, new) == 0


def test_difference_does_not_match_records_across_partitions():
    assert _difference({("orders", 0): [b"a"]}, {("orders", 1): [b"a"]}) == 1


SCENARIO = """\
name: t
clusters: {primary: {}, dr: {}}
topics: [{name: orders, cluster: primary}]
replication: {flows: [{source: primary, target: dr}]}
timeline:
  - {at: 5s, do: unplanned_failover, from: primary, to: dr}
  - {at: 10s, do: failback, from: dr, to: primary}
duration: 20s
expectations:
  failback.missing: 0
  failback.converge_s: "<= 60"
"""


def test_failback_expectations_are_judged_on_the_failback_figures():
    s = parse_scenario(SCENARIO, "t.yaml")
    failback = FailbackSummary.model_validate({"from": "dr", "to": "primary", "name": "dr->primary", "converged": True,
                                               "topics": 1, "records": 10, "missing": 0, "extra": 0,
                                               "converge_s": 75.0})
    rows = evaluate(s, [], [], [failback])
    assert [(r.name, r.passed, r.actual) for r in rows] == [
        ("failback.missing[dr->primary] == 0", True, 0),
        ("failback.converge_s[dr->primary] <= 60", False, 75.0)]


def test_a_failback_that_never_ran_fails_its_expectations():
    rows = evaluate(parse_scenario(SCENARIO, "t.yaml"), [], [], [])
    assert rows and not any(r.passed for r in rows)
