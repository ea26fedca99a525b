"""The built-in invariants: judged in every drill whatever its expectations list, named in
summary.json when they fail; the bounds a timeline demands; honest verdicts when interrupted."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mirrordrill.harness.drill.checking import Checked, check_drill
from mirrordrill.harness.drill.invariants import producer_prefix
from mirrordrill.harness.drill.results import DrillSummary, Logs
from mirrordrill.harness.drill.summary import evaluate, render_table
from mirrordrill.harness.drill.topology import check_pairs, origin_topics
from mirrordrill.harness.drill.validate import ScenarioInvalid, parse_scenario
from mirrordrill.loadgen.histories.kinds import ACKED_SENDS, TARGET_RECORDS, TIMELINE_EVENTS, history_path
from mirrordrill.loadgen.histories.records import AckedSend, TargetRecord, TimelineEvent
from mirrordrill.loadgen.histories.writer import HistoryWriter

QUICKSTART = Path(__file__).resolve().parents[2] / "scenarios" / "quickstart.yaml"
T0 = 1_700_000_000_000
PRODUCER = "orders-primary-12345abcdef-u0"  # loadgen's <name>-<cluster>-<instance>-u<n>


def quickstart_without_expectations() -> str:
    """quickstart.yaml as a user would copy it, with its expectations removed."""
    data = yaml.safe_load(QUICKSTART.read_text())
    del data["expectations"]
    return yaml.safe_dump(data)


def _write(directory: Path, kind, rows) -> None:
    w = HistoryWriter(kind, history_path(directory, kind, "test"))
    w.write_many(rows)
    w.close()


def run_checked(tmp_path: Path, text: str, *, records: int, drop: set[int] = frozenset(), dup: set[int] = frozenset(),
                drained: bool = True, interrupted: bool = False, replicator: str = "pyspark") -> DrillSummary:
    """Histories of one flow primary->dr (1 partition), checked and judged as the engine does."""
    s = parse_scenario(text, "copy.yaml", replicator)
    acked = [AckedSend("primary", "orders", 0, i, PRODUCER, i, T0 + i * 5, T0 + i * 5 + 2, 1024, 7)
             for i in range(records)]
    seen, offset = [], 0
    for i in range(records):
        for _ in range(0 if i in drop else 2 if i in dup else 1):
            seen.append(TargetRecord("dr", "primary.orders", 0, offset, PRODUCER, i, T0 + i * 5 + 50, True, 7))
            offset += 1
    events = [TimelineEvent("drain", "drain", T0 + 70_000, T0 + 71_000, "ok", "lag 0")] if drained else []
    _write(tmp_path, ACKED_SENDS, acked)
    _write(tmp_path, TARGET_RECORDS, seen)
    _write(tmp_path, TIMELINE_EVENTS, events)
    checked = Checked()
    check_drill(tmp_path, check_pairs(s, origin_topics(s)), [], checked)
    rows = evaluate(s, checked.flows, [], [], replicator=replicator, load=checked.load_facts(T0),
                    interrupted=interrupted)
    return DrillSummary(scenario=s.name, replicator=replicator, started_at="2026-11-23T00:00:00+00:00",
                        passed=not interrupted and all(r.passed for r in rows), duration_s=80.0,
                        interrupted=interrupted, error=None, flows=checked.flows, failovers=[], failbacks=[],
                        expectations=rows, timeline=checked.timeline, logs=Logs(), rerun="mirrordrill run copy.yaml")


def outcomes(summary: DrillSummary) -> dict[str, str]:
    return {i.name: i.outcome for i in DrillSummary.model_validate(summary.to_json()).invariants}


# --- the done-when: a copy of quickstart with no expectations still catches a bad replicator


def test_a_quickstart_copy_without_expectations_passes_a_replicator_that_copies_exactly_once(tmp_path):
    summary = run_checked(tmp_path, quickstart_without_expectations(), records=12_000)
    assert summary.passed and summary.verdict == "passed"
    assert outcomes(summary) == {"no_loss": "held", "no_corruption": "held", "no_duplicates": "held",
                                 "load_ran": "held", "drained": "held"}


def test_a_quickstart_copy_without_expectations_fails_on_a_dropped_record_naming_no_loss(tmp_path):
    summary = run_checked(tmp_path, quickstart_without_expectations(), records=12_000, drop={5000})
    assert not summary.passed and summary.verdict == "failed"
    saved = summary.to_json()
    assert [i for i in saved["invariants"] if i["outcome"] == "failed"] == [
        {"name": "no_loss", "outcome": "failed", "reason": None, "rows": ["invariant no_loss: lost[primary->dr] == 0"]}]
    row = next(r for r in saved["expectations"] if r["invariant"] == "no_loss")
    assert (row["passed"], row["actual"]) == (False, 1)


def test_a_quickstart_copy_without_expectations_fails_on_a_duplicate_naming_no_duplicates(tmp_path):
    summary = run_checked(tmp_path, quickstart_without_expectations(), records=12_000, dup={10, 11})
    assert not summary.passed
    assert outcomes(summary)["no_duplicates"] == "failed"
    assert outcomes(summary)["no_loss"] == "held"
    assert "[FAIL] invariant no_duplicates: duplicates[primary->dr] == 0 (actual 2)" in render_table(summary)


def test_a_load_that_did_not_run_fails_load_ran(tmp_path):
    # quickstart asks 200 records/s for 60 s: 12,000; half of it is the floor
    summary = run_checked(tmp_path, quickstart_without_expectations(), records=5_000)
    assert outcomes(summary)["load_ran"] == "failed"
    row = next(r for r in summary.expectations if r.invariant == "load_ran")
    assert (row.actual, row.limit, row.op) == (5_000, 6_000, ">=")


def test_a_relaxed_invariant_is_not_judged_and_its_reason_is_printed(tmp_path):
    text = quickstart_without_expectations().replace(
        "invariants:\n  duplicates: 0\n", "invariants:\n  duplicates: 0\n  relax: {load_ran: 'backlog drill: the load is throttled on purpose'}\n")
    assert "relax" in text
    summary = run_checked(tmp_path, text, records=100)
    assert summary.passed
    assert outcomes(summary)["load_ran"] == "relaxed"
    assert "[relaxed] invariant load_ran: acked (relaxed): backlog drill: the load is throttled on purpose" in render_table(summary)


# --- honest verdicts when interrupted


def test_an_interrupted_drill_counts_the_untransmitted_tail_in_flight_not_lost(tmp_path):
    # records 0..99 acked; the target got 0..59 except 30: 30 was skipped (59 came after it), 60..99 may be on their way
    summary = run_checked(tmp_path, quickstart_without_expectations(), records=100, drop={30, *range(60, 100)},
                          drained=False, interrupted=True)
    flow = summary.flows[0]
    assert (flow.lost, flow.in_flight) == (1, 40)
    assert summary.verdict == "interrupted" and not summary.passed
    assert outcomes(summary) == {"no_loss": "failed", "no_corruption": "held", "no_duplicates": "held",
                                 "load_ran": "not judged", "drained": "not judged"}
    assert "40 record(s) still in flight, not counted lost" in render_table(summary)


def test_after_a_completed_drain_every_unseen_record_is_lost(tmp_path):
    summary = run_checked(tmp_path, quickstart_without_expectations(), records=100, drop={30, *range(60, 100)})
    assert (summary.flows[0].lost, summary.flows[0].in_flight) == (41, 0)


def test_a_drain_that_timed_out_fails_drained(tmp_path):
    summary = run_checked(tmp_path, quickstart_without_expectations(), records=12_000, drop=set(range(11_990, 12_000)),
                          drained=False)
    assert (summary.flows[0].lost, summary.flows[0].in_flight) == (0, 10)
    assert outcomes(summary)["drained"] == "failed" and not summary.passed


def test_an_older_summary_gets_its_verdict():
    old = {"scenario": "s", "replicator": "pyspark", "passed": False, "started_at": "x", "duration_s": 1,
           "interrupted": True, "error": None, "flows": [], "failovers": [], "failbacks": [], "expectations": [],
           "timeline": [], "logs": {}, "rerun": "r"}
    assert DrillSummary.model_validate(old).verdict == "interrupted"
    assert DrillSummary.model_validate({**old, "interrupted": False}).verdict == "failed"


# --- the bounds a timeline demands, at validate time

FAILOVER_DRILL = """\
name: t
clusters: {primary: {}, dr: {}}
topics: [{name: orders, cluster: primary}]
replication: {flows: [{source: primary, target: dr}]}
load: {producers: [{cluster: primary, topics: [orders], rate: 10}]}
timeline:
  - {at: 5s, do: unplanned_failover, from: primary, to: dr}
duration: 20s
"""


def _problems(text: str, replicator: str | None = None) -> list[str]:
    with pytest.raises(ScenarioInvalid) as err:
        parse_scenario(text, "drill.yaml", replicator)
    return [str(p) for p in err.value.problems]


def test_a_quickstart_copy_without_its_duplicates_bound_is_refused_naming_the_fault():
    text = quickstart_without_expectations().replace("invariants:\n  duplicates: 0\n", "")
    [problem] = _problems(text)
    assert "timeline[0]: after this blackhole at-least-once delivery may copy records twice" in problem
    assert "'invariants: {duplicates: N}'" in problem


def test_killing_the_primary_needs_an_rpo_and_a_duplicates_bound():
    problems = _problems(FAILOVER_DRILL)
    assert len(problems) == 2
    assert "drill.yaml:7: timeline[0]: this unplanned_failover kills or cuts off primary" in problems[0]
    assert "state the RPO in records per flow, 'invariants: {rpo_records: N}'" in problems[0]
    assert "no_duplicates invariant needs a limit" in problems[1]
    parse_scenario(FAILOVER_DRILL + "invariants: {rpo_records: 500, duplicates: 0}\n", "drill.yaml")
    parse_scenario(FAILOVER_DRILL + "invariants:\n  rpo_records: 500\n  relax: {no_duplicates: MM2 is at-least-once}\n",
                   "drill.yaml")


def test_killing_a_spark_worker_needs_a_duplicates_bound_because_spark_reruns_its_tasks():
    text = FAILOVER_DRILL.replace("{at: 5s, do: unplanned_failover, from: primary, to: dr}",
                                  "{at: 5s, do: kill_spark_worker, worker: 0}").replace(
        "replication: {flows:", "replication: {mode: microbatch, spark: {master: standalone}, flows:")
    [problem] = _problems(text)
    assert "after this kill_spark_worker at-least-once delivery may copy records twice" in problem
    parse_scenario(text + "invariants: {duplicates: 1500}\n", "drill.yaml")


def test_a_relaxation_needs_a_reason_and_a_known_invariant():
    assert any("relax" in p for p in _problems(FAILOVER_DRILL + "invariants: {rpo_records: 5, relax: {no_duplicates: ''}}\n"))
    assert any("no_dupes" in p for p in _problems(FAILOVER_DRILL + "invariants: {rpo_records: 5, relax: {no_dupes: x y z}}\n"))


def test_a_bound_for_one_replicator_only_serves_that_replicator():
    text = FAILOVER_DRILL + "invariants:\n  rpo_records: 500\n  mirrormaker2: {duplicates: 300}\n"
    parse_scenario(text, "drill.yaml", "mirrormaker2")
    assert any("no_duplicates" in p for p in _problems(text, "pyspark"))
    s = parse_scenario(text + "  pyspark: {duplicates: 0}\n", "drill.yaml")
    assert (s.invariants.for_replicator("pyspark").duplicates, s.invariants.for_replicator("mirrormaker2").duplicates,
            s.invariants.for_replicator("command").duplicates) == (0, 300, None)


def test_a_killed_primary_may_lose_up_to_its_rpo_and_no_more(tmp_path):
    data = yaml.safe_load(quickstart_without_expectations())
    data["timeline"] = [{"at": "20s", "do": "kill_cluster", "cluster": "primary"}]
    data["invariants"] = {"duplicates": 0, "rpo_records": 3}
    text = yaml.safe_dump(data)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert outcomes(run_checked(tmp_path / "a", text, records=12_000, drop={1, 2, 3}))["no_loss"] == "held"
    assert outcomes(run_checked(tmp_path / "b", text, records=12_000, drop={1, 2, 3, 4}))["no_loss"] == "failed"
    del data["invariants"]["rpo_records"]
    assert any("kill_cluster kills or cuts off primary" in p for p in _problems(yaml.safe_dump(data)))


# --- expectations for one replicator


def test_a_replicators_own_expectations_replace_the_common_line_on_the_same_metric():
    text = FAILOVER_DRILL + ("invariants: {rpo_records: 5, duplicates: 9}\nexpectations:\n  lost: 0\n"
                             "  duplicates: '<= 3000'\n  mirrormaker2:\n    duplicates: '<= 500'\n"
                             "    'latency_ms.p99[primary->dr]': 900\n")
    s = parse_scenario(text, "drill.yaml")
    def names(r: str) -> list[str]:
        return sorted(e.name for e in s.parsed_expectations(r))

    assert names("pyspark") == ["duplicates <= 3000", "lost == 0"]
    assert names("mirrormaker2") == ["duplicates <= 500", "latency_ms.p99[primary->dr] <= 900", "lost == 0"]
    assert names(None) == names("pyspark")  # the file's own replicator


def test_a_nested_mapping_that_names_no_replicator_is_refused():
    [problem] = _problems(FAILOVER_DRILL + "invariants: {rpo_records: 5, duplicates: 9}\n"
                                           "expectations:\n  mm2:\n    duplicates: 5\n")
    assert "expectations.mm2: 'mm2' is not a replicator" in problem and "mirrormaker2" in problem
    [problem] = _problems(FAILOVER_DRILL + "invariants: {rpo_records: 5, duplicates: 9}\n"
                                           "expectations:\n  pyspark: 5\n")
    assert "holds the limits that apply to the pyspark replicator only" in problem
    [problem] = _problems(FAILOVER_DRILL + "invariants: {rpo_records: 5, duplicates: 9}\n"
                                           "expectations:\n  pyspark:\n    dupes: 5\n")
    assert "expectations.pyspark.dupes" in problem and "unknown metric" in problem


def test_the_report_page_shows_the_verdict_the_invariants_and_a_relaxations_reason(tmp_path):
    from mirrordrill.reports.summary_html import summary_html
    text = quickstart_without_expectations().replace(
        "invariants:\n  duplicates: 0\n", "invariants:\n  duplicates: 0\n  relax: {load_ran: 'throttled on purpose'}\n")
    page = summary_html(run_checked(tmp_path, text, records=100, drop={5}))
    assert "FAILED" in page and "built-in invariant" in page
    assert "<td class='l bad'>failed</td>" in page  # no_loss
    assert "relaxed: throttled on purpose" in page and "<td class='l'>throttled on purpose</td>" in page


def test_a_distributed_loads_workers_count_for_their_producer_definition():
    # a load worker's instance is its master's plus w<index> (loadgen.spec.LoadSpec.worker_instance)
    assert producer_prefix("orders-primary-12345abcdefw0-u0") == producer_prefix(PRODUCER) == "orders-primary"
    assert producer_prefix("orders-primary-12345abcdefw17-u3") == "orders-primary"
