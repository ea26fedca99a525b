"""``run --baseline``: a run compared with an earlier one, figure by figure, with stated tolerances."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from mirrordrill.harness.drill.baseline import (
    DEFAULT_TOLERANCES,
    BaselineCheck,
    BaselineError,
    Tolerance,
    check_same_drill,
    compare,
    load_baseline,
    parse_tolerances,
)
from mirrordrill.harness.drill.results import SCHEMA, DrillResults, DrillSummary, FailoverSummary, FlowSummary, save_results
from mirrordrill.harness.drill.run_folder import BASELINE_FILE

BEFORE = Path(__file__).parent / "fixtures" / "summary-before-schema.json"


def _summary(p50=89, p90=3378, p99=5019, throughput=99.5, failovers=(), stall=6.2) -> DrillSummary:
    raw = {**json.loads(BEFORE.read_text()), "schema": SCHEMA}
    flow = raw["flows"][0]
    flow["latency_ms"].update(p50=p50, p90=p90, p99=p99)
    flow["throughput_records_s"] = throughput
    flow["stall_s"] = stall
    raw["failovers"] = [_failover(**f).model_dump(mode="json", by_alias=True) for f in failovers]
    return DrillSummary.model_validate(raw)


def _failover(group="billing", strategy="translated", rto_s=3.0, reprocessed=0, primary="primary", dr="dr"):
    return FailoverSummary.model_validate(dict(
        group=group, strategy=strategy, primary=primary, dr=dr, failure_ts_ms=1, available=100, processed=100,
        skipped=0, reprocessed=reprocessed, reprocessed_across_failover=reprocessed, rto_s=rto_s, rpo_records=0,
        rpo_window_s=None, rpo_first_ack_ts_ms=None, rpo_last_ack_ts_ms=None, skipped_sample=[], rpo_sample=[]))


def _rows(base: DrillSummary, now: DrillSummary, tolerances=None):
    return {(r.metric, r.scope): r for r in compare(base, now.flows, now.failovers, tolerances or DEFAULT_TOLERANCES)}


def test_the_same_figures_pass():
    rows = _rows(_summary(failovers=[{}]), _summary(failovers=[{}]))
    assert rows and all(r.passed for r in rows.values())
    assert set(rows) == {("latency_ms.p50", "primary->dr"), ("latency_ms.p90", "primary->dr"),
                         ("latency_ms.p99", "primary->dr"), ("throughput_records_s", "primary->dr"),
                         ("stall_s", "primary->dr"), ("failover.rto_s", "billing (translated, primary->dr)"),
                         ("failover.reprocessed", "billing (translated, primary->dr)")}


def test_a_p99_that_tripled_fails_though_an_absolute_limit_would_hold():
    row = _rows(_summary(p99=5019), _summary(p99=15000))[("latency_ms.p99", "primary->dr")]
    assert not row.passed
    assert (row.baseline, row.actual, row.op, row.limit) == (5019, 15000, "<=", 5019 * 1.5 + 250)


def test_the_limit_is_relative_plus_slack_and_its_edge_passes():
    limit = 89 * 1.5 + 250  # 383.5 ms
    assert _rows(_summary(p50=89), _summary(p50=383))[("latency_ms.p50", "primary->dr")].passed
    assert not _rows(_summary(p50=89), _summary(p50=384))[("latency_ms.p50", "primary->dr")].passed
    assert _rows(_summary(p50=89), _summary(p50=383))[("latency_ms.p50", "primary->dr")].limit == limit


def test_throughput_is_a_floor():
    rows = _rows(_summary(throughput=200.0), _summary(throughput=150.0))
    row = rows[("throughput_records_s", "primary->dr")]
    assert (row.op, row.limit, row.passed) == (">=", 160.0, False)
    assert _rows(_summary(throughput=200.0), _summary(throughput=400.0))[("throughput_records_s", "primary->dr")].passed


def test_a_stall_that_doubled_fails():
    row = _rows(_summary(stall=6.2), _summary(stall=12.4))[("stall_s", "primary->dr")]
    assert (row.op, row.limit, row.passed) == ("<=", 6.2 * 1.5 + 2.0, False)
    assert _rows(_summary(stall=6.2), _summary(stall=11.3))[("stall_s", "primary->dr")].passed
    older = _rows(_summary(stall=None), _summary(stall=12.4))[("stall_s", "primary->dr")]
    assert older.passed and older.note == "nothing measured in the baseline"


def test_rto_and_reprocessed_per_group_and_strategy():
    base = _summary(failovers=[{"rto_s": 4.0, "reprocessed": 100}])
    now = _summary(failovers=[{"rto_s": 9.0, "reprocessed": 130}])
    rows = _rows(base, now)
    rto = rows[("failover.rto_s", "billing (translated, primary->dr)")]
    assert (rto.limit, rto.passed) == (8.0, False)
    reprocessed = rows[("failover.reprocessed", "billing (translated, primary->dr)")]
    assert (reprocessed.limit, reprocessed.passed) == (130.0, True)


def test_a_group_moved_twice_is_compared_move_by_move():
    base = _summary(failovers=[{"rto_s": 2.0}, {"rto_s": 2.0}])
    now = _summary(failovers=[{"rto_s": 2.0}, {"rto_s": 30.0}])
    rows = _rows(base, now)
    assert rows[("failover.rto_s", "billing (translated, primary->dr)")].passed
    assert not rows[("failover.rto_s", "billing (translated, primary->dr, #2)")].passed


def test_a_figure_the_new_run_no_longer_has_is_a_regression():
    base = _summary(failovers=[{}])
    now = _summary()
    row = _rows(base, now)[("failover.rto_s", "billing (translated, primary->dr)")]
    assert not row.passed and "not measured" in row.note
    gone = _rows(_summary(p99=5000), _summary(p99=None))[("latency_ms.p99", "primary->dr")]
    assert not gone.passed


def test_a_figure_the_baseline_lacks_is_not_judged():
    row = _rows(_summary(failovers=[{"rto_s": None}]), _summary(failovers=[{"rto_s": 50.0}]))[
        ("failover.rto_s", "billing (translated, primary->dr)")]
    assert row.passed and row.limit is None


def test_tolerances_from_flags_override_the_defaults():
    t = parse_tolerances(["latency=20%+10", "throughput=5%", "rto=+1"])
    assert t["latency"] == Tolerance(0.2, 10.0)
    assert t["throughput"] == Tolerance(0.05, 0.0)
    assert t["rto"] == Tolerance(0.0, 1.0)
    assert t["reprocessed"] == DEFAULT_TOLERANCES["reprocessed"]
    row = _rows(_summary(p50=100), _summary(p50=125), t)[("latency_ms.p50", "primary->dr")]
    assert (row.limit, row.passed) == (130.0, True)


@pytest.mark.parametrize("spec", ["latency", "latency=fast", "p99=20%", "latency=", "throughput=20"])
def test_a_bad_tolerance_names_the_valid_form(spec):
    with pytest.raises(BaselineError, match=r"KEY=PERCENT%\[\+SLACK\].*latency, rto, stall, reprocessed, throughput"):
        parse_tolerances([spec])


def test_a_baseline_from_a_run_folder_or_a_saved_summary_file(tmp_path):
    save_results(tmp_path / "run", DrillResults(_summary(p99=777)))
    assert load_baseline(tmp_path / "run").flows[0].latency_ms.p99 == 777
    saved = tmp_path / "quickstart-baseline.json"
    saved.write_text((tmp_path / "run" / "summary.json").read_text())
    assert load_baseline(saved).flows[0].latency_ms.p99 == 777


def test_a_missing_or_foreign_baseline_is_refused_before_the_drill(tmp_path):
    with pytest.raises(BaselineError, match="no such file or folder"):
        load_baseline(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BaselineError, match="no summary.json"):
        load_baseline(tmp_path / "empty")
    save_results(tmp_path / "run", DrillResults(_summary()))
    name = _summary().scenario
    with pytest.raises(BaselineError, match="not 'other'"):
        BaselineCheck.prepare(tmp_path / "run", None, "other", "pyspark", BEFORE)
    other = "command" if _summary().replicator != "command" else "pyspark"
    check = BaselineCheck.prepare(tmp_path / "run", None, name, other, BEFORE)
    assert any("between replicators" in w for w in check.warnings)


def test_the_comparison_becomes_expectations_and_is_saved_with_its_table(tmp_path):
    save_results(tmp_path / "base", DrillResults(_summary(p99=1000)))
    check = BaselineCheck.prepare(tmp_path / "base", ["latency=10%"], _summary().scenario, "pyspark", BEFORE)
    now = _summary(p99=2000)
    comparison = check.judge(now.flows, now.failovers)
    assert not comparison.passed
    failed = [e for e in comparison.expectation_rows() if not e.passed]
    assert [e.name for e in failed] == ["baseline: latency_ms.p99[primary->dr] <= 1100"]
    path = comparison.save(tmp_path)
    assert path.name == BASELINE_FILE
    doc = json.loads(path.read_text())
    assert doc["passed"] is False and "REGRESSED" in doc["table"] and "latency 10%" in doc["table"]


def test_the_allure_attachments_carry_the_comparison(tmp_path):
    from mirrordrill.reports.attachments import baseline_attachments
    assert baseline_attachments(tmp_path) == []
    save_results(tmp_path / "base", DrillResults(_summary()))
    check = BaselineCheck.prepare(tmp_path / "base", None, _summary().scenario, "pyspark", BEFORE)
    now = copy.deepcopy(_summary())
    check.judge(now.flows, now.failovers).save(tmp_path)
    names = [a.name for a in baseline_attachments(tmp_path)]
    assert names == ["baseline comparison", "baseline.json"]


def test_flow_summaries_are_what_the_engine_hands_in():
    # the engine judges checked.flows (FlowSummary) and checked.failovers (FailoverSummary)
    s = _summary(failovers=[{}])
    assert isinstance(s.flows[0], FlowSummary) and isinstance(s.failovers[0], FailoverSummary)


def test_run_refuses_a_bad_baseline_before_anything_starts(tmp_path, capsys):
    from mirrordrill.harness.cli.commands import main
    drill = str(Path(__file__).resolve().parents[2] / "scenarios" / "quickstart.yaml")
    save_results(tmp_path / "other", DrillResults(_summary()))  # a run of another drill
    assert main(["run", drill, "--baseline", str(tmp_path / "other"), "--out", str(tmp_path / "run")]) == 2
    assert "not 'quickstart'" in capsys.readouterr().err
    assert main(["run", drill, "--baseline", str(tmp_path / "missing"), "--out", str(tmp_path / "run")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    assert main(["run", drill, "--tolerance", "latency=10%", "--out", str(tmp_path / "run")]) == 2
    assert "--baseline" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()  # nothing started


def test_a_drill_rewritten_by_a_calibration_run_is_the_same_drill(tmp_path):
    """Calibration and sweep runs run a rewritten copy: equal content is no changed drill."""
    drill = tmp_path / "d.yaml"
    drill.write_text("name: d\nduration: 60s  # a comment\n")
    summary = _summary().model_copy(update={"drill_sha256": "0" * 64})
    copy = tmp_path / "scenario.yaml"
    copy.write_text("duration: 60s\nname: d\n")
    assert check_same_drill(summary, summary.scenario, summary.replicator, drill, copy) == []
    copy.write_text("duration: 90s\nname: d\n")
    assert any("drill file changed" in w for w in check_same_drill(summary, summary.scenario, summary.replicator,
                                                                     drill, copy))
