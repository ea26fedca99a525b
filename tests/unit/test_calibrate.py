"""``calibrate``'s pure part: observed ranges -> suggested limits, and the YAML to paste."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from mirrordrill.harness.drill.metrics import METRICS
from mirrordrill.harness.drill.results import SCHEMA, DrillSummary, FailoverSummary
from mirrordrill.harness.drill.schema import parse_expectation
from mirrordrill.harness.tools.calibrate.limits import (
    Calibration,
    CalibrationError,
    Limit,
    observe,
    parse_margin,
    suggest,
)

BEFORE = Path(__file__).parent / "fixtures" / "summary-before-schema.json"
REPO = Path(__file__).resolve().parents[2]
KIND = METRICS


def _summary(p99=5019, lost=0, duplicates=0, throughput=99.5, acked=1792, flows=("primary->dr",), failovers=()):
    raw = {**json.loads(BEFORE.read_text()), "schema": SCHEMA}
    template = raw["flows"][0]
    raw["flows"] = []
    for name in flows:
        f = json.loads(json.dumps(template))
        f["latency_ms"]["p99"] = p99
        f.update(name=name, lost=lost, duplicates=duplicates, throughput_records_s=throughput, acked=acked)
        raw["flows"].append(f)
    raw["failovers"] = [FailoverSummary.model_validate(dict(
        group=g, strategy="translated", primary="primary", dr="dr", failure_ts_ms=1, available=10, processed=10,
        skipped=0, reprocessed=r, reprocessed_across_failover=r, rto_s=rto, rpo_records=0, rpo_window_s=None,
        rpo_first_ack_ts_ms=None, rpo_last_ack_ts_ms=None, skipped_sample=[], rpo_sample=[])).model_dump(
        mode="json", by_alias=True) for g, r, rto in failovers]
    return DrillSummary.model_validate(raw)


def test_a_ceiling_is_the_worst_run_plus_margin_and_slack_rounded_up_to_two_figures():
    # 9805 x 1.5 + 100 = 14807.5 -> 15000
    assert suggest(KIND["latency_ms.p99"], [9200, 9805], 0.5) == Limit("<=", 15000)
    # 75 x 1.5 + 100 = 212.5 -> 220
    assert suggest(KIND["latency_ms.p50"], [75, 60], 0.5) == Limit("<=", 220)


def test_a_count_seen_zero_in_every_run_stays_zero():
    assert suggest(KIND["lost"], [0, 0, 0], 0.5) == Limit("==", 0)
    assert suggest(KIND["lost"], [0, 0, 0], 0.5).yaml_value() == "0"


def test_a_count_seen_nonzero_gets_the_margin_as_a_whole_number():
    # e.g. a group that reprocessed 348 records: 348 x 1.5 = 522 -> 530
    assert suggest(KIND["failover.reprocessed"], [348, 310], 0.5) == Limit("<=", 530)
    assert suggest(KIND["duplicates"], [0, 3], 0.2) == Limit("<=", 4)  # 3.6 -> 4


def test_where_more_is_better_the_limit_is_a_floor_below_the_worst_run():
    assert suggest(KIND["throughput_records_s"], [199.8, 180.2], 0.5) == Limit(">=", 90)
    assert suggest(KIND["acked"], [11999, 11603], 0.5) == Limit(">=", 5800)
    assert suggest(KIND["throughput_records_s"], [199.8], 0.5).yaml_value() == '">= 99"'


def test_a_margin_of_zero_gives_the_worst_run_itself_rounded_leniently():
    assert suggest(KIND["failover.rto_s"], [4.0], 0.0) == Limit("<=", 5.0)  # 4 + 1 s slack
    assert suggest(KIND["throughput_records_s"], [123.4], 0.0) == Limit(">=", 120)


def test_nothing_measured_suggests_nothing():
    assert suggest(KIND["failover.rto_s"], [None, None], 0.5) is None


def test_a_suggested_limit_holds_for_every_observed_run():
    for metric, values in (("latency_ms.p99", [1, 99, 12345]), ("failover.reprocessed", [7, 1]),
                           ("throughput_records_s", [0.5, 1000.0]), ("lost", [0, 2])):
        limit = suggest(KIND[metric], values, 0.25)
        e = parse_expectation(metric, limit.yaml_value().strip('"'))
        assert all(e.holds(v) for v in values), (metric, limit)


@pytest.mark.parametrize("text,value", [("50%", 0.5), ("0.5", 0.5), ("0", 0.0), ("12.5%", 0.125)])
def test_margins(text, value):
    assert parse_margin(text) == value


@pytest.mark.parametrize("text", ["150%", "1", "-5%", "lots", ""])
def test_a_bad_margin_says_what_is_valid(text):
    with pytest.raises(CalibrationError, match="percentage below 100%"):
        parse_margin(text)


def test_observe_gathers_each_metric_over_the_runs():
    observed = {(o.kind.name, o.scope): o.values for o in observe([_summary(p99=100), _summary(p99=300, lost=2)])}
    assert observed[("latency_ms.p99", "primary->dr")] == [100, 300]
    assert observed[("lost", "primary->dr")] == [0, 2]


def test_the_stall_gets_the_worst_run_plus_margin_and_a_second_and_older_runs_are_left_out():
    runs = [_summary(), _summary()]
    for stall, run in zip((6.2, 7.9), runs, strict=True):
        run.flows[0].stall_s = stall
    observed = {(o.kind.name, o.scope): o.values for o in observe(runs)}
    assert observed[("stall_s", "primary->dr")] == [6.2, 7.9]
    assert _paste(Calibration("# calibrated by test", observe(runs), 0.5))["stall_s"] == "<= 13"  # 7.9 x 1.5 + 1
    assert "stall_s" not in _paste(Calibration("# calibrated by test", observe([_summary()]), 0.5))


def test_a_group_moved_twice_is_judged_by_its_worse_move():
    s = _summary(failovers=[("billing", 5, 2.0), ("billing", 40, 9.0)])
    observed = {(o.kind.name, o.scope): o.values for o in observe([s])}
    assert observed[("failover.reprocessed", "billing")] == [40]
    assert observed[("failover.rto_s", "billing")] == [9.0]


def _paste(calibration: Calibration) -> dict:
    text = calibration.expectations_yaml()
    assert text.startswith("# calibrated by")
    return yaml.safe_load(text)["expectations"]


def test_the_yaml_parses_as_a_drill_files_expectations():
    runs = [_summary(p99=9805, throughput=199.8, acked=11999, failovers=[("billing", 0, 3.2)]),
            _summary(p99=9200, throughput=198.0, acked=11900, failovers=[("billing", 0, 4.0)])]
    expectations = _paste(Calibration("# calibrated by test", observe(runs), 0.5))
    assert expectations["lost"] == 0 and expectations["duplicates"] == 0
    assert expectations["latency_ms.p99"] == "<= 15000"
    assert expectations["throughput_records_s"] == ">= 99"
    assert expectations["failover.rto_s"] == "<= 7"  # 4.0 x 1.5 + 1 s
    assert "latency_ms.max" not in expectations and "latency_ms.p90" not in expectations  # noisy: shown only
    for key, value in expectations.items():
        parse_expectation(key, value)  # every line is valid as written


def test_several_flows_are_scoped_by_name():
    runs = [_summary(flows=("primary->dr", "dr->primary"))]
    expectations = _paste(Calibration("# calibrated by test", observe(runs), 0.5))
    assert "lost[primary->dr]" in expectations and "lost[dr->primary]" in expectations
    assert "lost" not in expectations


def test_the_range_table_shows_each_run_and_the_suggestion():
    table = Calibration("# h", observe([_summary(p99=100), _summary(p99=300)]), 0.5).range_table()
    row = next(line for line in table.splitlines() if "latency_ms.p99" in line)
    assert row.split()[1:6] == ["100", "300", "100", "200", "300"] and row.rstrip().endswith("<= 550")
    assert "too noisy" in next(line for line in table.splitlines() if "latency_ms.max" in line)


def test_calibrate_refuses_bad_arguments_before_any_drill(capsys):
    from mirrordrill.harness.cli.commands import main
    drill = str(REPO / "scenarios" / "quickstart.yaml")
    assert main(["calibrate", drill, "--margin", "150%"]) == 2
    assert "--margin" in capsys.readouterr().err
    assert main(["calibrate", drill, "--runs", "0"]) == 2
    assert "at least once" in capsys.readouterr().err
