"""The typed results of a drill: summary.json keeps its fields, saving and loading round-trips,
and a folder whose results cannot be read says why and how to re-run the drill."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mirrordrill.harness.drill.checker.contract import FailoverInput, FlowInput, FlowSeries, SecondSeries
from mirrordrill.harness.drill.checker.reference import check_failover, check_flow
from mirrordrill.harness.drill.results import (
    SCHEMA,
    DrillResults,
    DrillSummary,
    ExpectationRow,
    FailbackSummary,
    FailoverSummary,
    FlowPlotData,
    FlowSummary,
    LatencySample,
    ResultsUnavailable,
    load_results,
    save_results,
)
from mirrordrill.loadgen.histories.records import AckedSend, ProcessedRecord, TargetRecord

# summary.json of a real run of tests/integration/report_fixtures.py's tiny drill, written by
# the engine before results were typed (it has no "schema"): the field names CI jobs read.
BEFORE = Path(__file__).parent / "fixtures" / "summary-before-schema.json"
ADDED = {"schema", "backlog_records",
         # issue 16: how the run was made, and timestamps in epoch ms
         "started_ms", "load_started_ms", "replicator_mode", "versions", "drill_sha256",
         # issue 14: interrupted drills' honest verdict, the built-in invariants
         "verdict", "invariants",
         # issue 12: where the replicator's Spark ran; issue 13: each replicator start's timings
         "environment", "replicator_starts",
         # issue 13: the bytes each WAN link carried (the sweep's WAN bytes per record)
         "wan_bytes",
         # issue 47: which replicator node held which task before and after each node fault
         "node_faults",
         # issue 46: each worker of a distributed load
         "load_workers"}
# issue 14: per flow (and topic), records still on their way when a drill was interrupted
ADDED_IN_FLOWS = {".flows[].in_flight", ".flows[].by_topic.orders.in_flight", ".flows[].samples.in_flight",
                  # issue 47: the stall (None and empty when read from a summary that lacked it)
                  ".flows[].stall_s", ".flows[].stall_by_partition",
                  # each timeline event's stall (None when read from a summary that lacked it)
                  ".flows[].events[].stall_s"}
ADDED_FLOW_FIELDS = ("in_flight", "stall_s", "stall_by_partition")


def _old() -> dict:
    return json.loads(BEFORE.read_text())


def _keys(value, path="") -> set[str]:
    """Every key path of a JSON value (list items share one path)."""
    if isinstance(value, dict):
        return {p for k, v in value.items() for p in {f"{path}.{k}"} | _keys(v, f"{path}.{k}")}
    if isinstance(value, list):
        return {p for v in value for p in _keys(v, f"{path}[]")}
    return set()


def test_a_summary_written_now_has_every_field_of_before_with_the_same_values():
    old = _old()
    new = DrillSummary.model_validate({**old, "schema": SCHEMA}).to_json()
    assert _keys(new) - {f".{k}" for k in ADDED} - ADDED_IN_FLOWS == _keys(old)
    flows = [{k: v for k, v in f.items() if k not in ADDED_FLOW_FIELDS} for f in new["flows"]]
    assert [(f["stall_s"], f["stall_by_partition"]) for f in new["flows"]] == [(None, {})] * len(flows)
    for f in flows:
        f["by_topic"] = {t: {k: v for k, v in fig.items() if k != "in_flight"} for t, fig in f["by_topic"].items()}
        f["samples"] = {k: v for k, v in f["samples"].items() if k != "in_flight"}
        assert {e.pop("stall_s") for e in f["events"]} <= {None}
    assert {k: v for k, v in new.items() if k not in ADDED} | {"flows": flows} == old
    assert list(new) == ["schema", *old, "backlog_records", "started_ms", "load_started_ms", "replicator_mode",
                         "versions", "drill_sha256", "environment", "replicator_starts", "verdict",
                         "invariants", "wan_bytes", "node_faults", "load_workers"]  # schema first, additions last
    keys = list(old["flows"][0])
    at = keys.index("latency_count") + 1
    keys[at:at] = ADDED_FLOW_FIELDS  # with the figures, before the details
    assert list(new["flows"][0]) == keys
    assert new["verdict"] == ("passed" if old["passed"] else "failed")


def test_flow_entries_are_the_checkers_own_summary_plus_name_and_via():
    acked = [AckedSend("A", "t", 0, i, "p", i, 1000 + i, 1001 + i, 10, 7) for i in range(3)]
    seen = [TargetRecord("B", "A.t", 0, i, "p", i, 1050 + i, True, 7) for i in range(2)]
    checked = check_flow(FlowInput("A", "B", {"A.t": "t"}, acked, seen)).summary()
    entry = FlowSummary.of(checked, "A->B", ()).model_dump(mode="json", by_alias=True)
    assert entry == {**json.loads(json.dumps(checked)), "name": "A->B", "via": []}
    assert list(entry) == [*checked, "name", "via"]


def test_failover_and_failback_entries_keep_their_fields():
    acked = [AckedSend("A", "t", 0, i, "p", i, 1000 + i, 1001 + i, 10, 7) for i in range(3)]
    processed = [ProcessedRecord("g", "A", "t", 0, i, "p", i, 1100 + i) for i in range(2)]
    result = check_failover(FailoverInput("g", "translated", "A", "B", 2000, {"A.t": "t"}, processed, acked, []))
    entry = FailoverSummary.model_validate(result.summary()).model_dump(mode="json", by_alias=True)
    assert entry == json.loads(json.dumps(result.summary()))
    # the dict harness/drill/failback.py appends to ctx.failbacks
    failback = {"from": "dr", "to": "primary", "name": "dr->primary", "converged": False, "topics": 0,
                "records": 0, "missing": None, "extra": None, "converge_s": None, "history_records": None,
                "history_note": None}
    assert FailbackSummary.model_validate(failback).model_dump(mode="json", by_alias=True) == failback


def test_expectation_rows_carry_note_and_failures_only_when_they_have_them():
    plain = ExpectationRow(name="lost[a->b] == 0", passed=True, actual=0, limit=0.0, op="==")
    assert plain.model_dump(mode="json") == {"name": "lost[a->b] == 0", "passed": True, "actual": 0, "limit": 0.0,
                                             "op": "=="}
    steps = ExpectationRow(name="every timeline step succeeded", passed=False, actual=1, limit=0, op="==",
                           failures=["kill x: no such broker"])
    assert steps.model_dump(mode="json")["failures"] == ["kill x: no such broker"]
    assert steps.model_dump(mode="json")["limit"] == 0 and "note" not in steps.model_dump(mode="json")


def _series() -> FlowSeries:
    return FlowSeries(produced=SecondSeries(100, (5, 5, 0)), replicated=SecondSeries(100, (4, 6)),
                      lag=SecondSeries(100, (1, 0, 0)), lag_by_partition={("orders", 0): SecondSeries(100, (1, 0, 0))},
                      offset_lag=SecondSeries(100, (None, 2)),
                      offset_lag_by_partition={("orders", "dr.orders", 0): SecondSeries(100, (None, 2))})


def test_saved_results_load_back_with_their_series_and_latencies(tmp_path):
    summary = DrillSummary.model_validate({**_old(), "schema": SCHEMA, "backlog_records": 1000})
    name = summary.flows[0].name
    latencies = (LatencySample(100_200, 40), LatencySample(100_900, 35))
    save_results(tmp_path, DrillResults(summary, {name: FlowPlotData(_series(), latencies)}))
    loaded = load_results(tmp_path)
    assert loaded.summary == summary and loaded.run_dir == tmp_path.resolve()
    (flow,) = loaded.flows
    assert (flow.name, flow.series, flow.latencies) == (name, _series(), latencies)
    assert flow.series.produced.at(101) == 5 and flow.series.lag.points()[0] == (100, 1)
    assert loaded.summary.backlog_records == 1000 and loaded.passed is summary.passed


def test_a_flow_without_series_loads_with_none(tmp_path):
    save_results(tmp_path, DrillResults(DrillSummary.model_validate({**_old(), "schema": SCHEMA})))
    (flow,) = load_results(tmp_path).flows
    assert flow.series is None and flow.latencies == ()


def test_a_folder_without_summary_says_so_and_how_to_run_the_drill(tmp_path):
    with pytest.raises(ResultsUnavailable, match=r"no summary\.json.*mirrordrill run <drill file> --out"):
        load_results(tmp_path)


def test_a_summary_without_schema_names_the_rerun_command(tmp_path):
    (tmp_path / "summary.json").write_text(BEFORE.read_text())
    with pytest.raises(ResultsUnavailable) as e:
        load_results(tmp_path)
    assert "no 'schema'" in str(e.value) and _old()["rerun"] in str(e.value)


def test_an_unknown_schema_names_both_versions_and_the_rerun_command(tmp_path):
    (tmp_path / "summary.json").write_text(json.dumps({**_old(), "schema": 99}))
    with pytest.raises(ResultsUnavailable) as e:
        load_results(tmp_path)
    assert "schema 99" in str(e.value) and f"reads schema {SCHEMA}" in str(e.value)
    assert _old()["rerun"] in str(e.value)


def test_report_of_a_folder_without_schema_fails_plainly(tmp_path, capsys):
    from mirrordrill.harness.cli.commands import EXIT_USAGE, main
    (tmp_path / "summary.json").write_text(BEFORE.read_text())
    assert main(["report", str(tmp_path)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "no 'schema'" in err and _old()["rerun"] in err and "Traceback" not in err
    assert main(["report", str(tmp_path / "missing")]) == EXIT_USAGE
    assert "no summary.json" in capsys.readouterr().err


def test_a_damaged_series_file_is_refused_with_the_rerun_command(tmp_path):
    name = _old()["flows"][0]["name"]
    summary = DrillSummary.model_validate({**_old(), "schema": SCHEMA})
    save_results(tmp_path, DrillResults(summary, {name: FlowPlotData(_series(), ())}))
    (series,) = (tmp_path / "series").glob("*.json")
    series.write_text(series.read_text()[:40])
    with pytest.raises(ResultsUnavailable, match="a series file cannot be read") as e:
        load_results(tmp_path)
    assert _old()["rerun"] in str(e.value)
