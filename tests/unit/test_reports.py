"""Report building blocks that need no cluster: fault windows, redaction, verdict, configuration."""

from __future__ import annotations

from harness.results import DrillSummary, TimelineEntry
from reports.attachments import redact_yaml
from reports.render import allure_config, default_history
from reports.summary_html import summary_html
from reports.timeline import fault_windows


def _event(name, kind, start, end, outcome="ok"):
    return TimelineEntry(name=name, kind=kind, start_ts_ms=start, end_ts_ms=end, outcome=outcome, detail="")


def test_a_fault_lasts_until_the_step_that_ends_it():
    timeline = [_event("blackhole a<->b", "blackhole", 1000, 1100), _event("pause_broker a/1", "pause_broker", 1500, 1600),
                _event("heal a<->b", "heal", 5000, 5150), _event("drain", "drain", 9000, 9500)]
    windows = {w.label: w for w in fault_windows(timeline, end_ms=20_000)}
    assert (windows["blackhole a<->b"].start_ms, windows["blackhole a<->b"].end_ms) == (1000, 5150)
    assert windows["pause_broker a/1"].end_ms == 20_000  # never resumed: lasts to the end
    assert not windows["drain"].is_fault and windows["drain"].end_ms == 9500
    assert "heal a<->b" not in windows


def test_parts_of_a_failover_or_failback_are_not_shaded_on_their_own():
    timeline = [_event("unplanned_failover primary->dr", "unplanned_failover", 0, 900),
                _event("stop producers on primary", "failover", 10, 300),
                _event("failback dr->primary", "failback", 1000, 5000), _event("wipe primary", "wipe", 1100, 1500),
                _event("converge dr->primary", "failback_part", 1500, 4000)]
    labels = [w.label for w in fault_windows(timeline, end_ms=9999)]
    assert labels == ["unplanned_failover primary->dr", "failback dr->primary"]


def test_heal_of_another_link_does_not_end_a_fault():
    timeline = [_event("blackhole a<->b", "blackhole", 0, 10), _event("heal a<->c", "heal", 50, 60)]
    (w,) = fault_windows(timeline, end_ms=99)
    assert w.end_ms == 99


def test_scenario_secrets_are_redacted_in_block_and_flow_style():
    text = "settings: {consumer.ssl.key.password: s3cret, tasks.max: 2}\nsasl.jaas.config: x y z\ntopics: [a]\n"
    out = redact_yaml(text)
    assert "s3cret" not in out and "x y z" not in out
    assert "tasks.max: 2" in out and "topics: [a]" in out


def _figures(**figures):
    zero = {"acked": 0, "replicated": 0, "lost": 0, "duplicates": 0, "reordered": 0, "corrupted": 0, "unexpected": 0,
            "latency_ms": {"p50": None, "p90": None, "p99": None, "max": None}, "throughput_records_s": None,
            "throughput_mb_s": None, "misplaced": 0, "uncertain_delivered": 0, "source_duplicates": 0,
            "replicated_bytes": 0, "latency_count": 0}
    return {**zero, **figures}


def test_summary_table_marks_violations():
    flow = {"source": "a", "target": "b", "topics": ["t"], "name": "a->b", "via": [], "by_topic": {}, "events": [],
            "samples": {k: [] for k in ("lost", "duplicates", "reordered", "misplaced", "corrupted", "unexpected",
                                        "uncertain_delivered")},
            **_figures(acked=10, replicated=9, lost=1, latency_ms={"p50": 5, "p90": 6, "p99": 7, "max": 8},
                       throughput_records_s=1.5, throughput_mb_s=0.1)}
    summary = DrillSummary.model_validate({
        "schema": 1, "scenario": "s", "replicator": "r", "passed": False, "started_at": "2026-01-01T00:00:00+00:00",
        "duration_s": 1.0, "interrupted": False, "error": None, "flows": [flow], "failovers": [], "failbacks": [],
        "expectations": [{"name": "lost[a->b] == 0", "passed": False, "actual": 1, "limit": 0, "op": "=="}],
        "timeline": [], "logs": {"brokers": {}}, "rerun": "mirrordrill run s.yaml"})
    html = summary_html(summary)
    assert "FAILED" in html and "VIOLATED" in html and "<td class='bad'>1</td>" in html


def test_allure_config_is_single_file_with_history(tmp_path):
    config = allure_config("x", tmp_path / "out", tmp_path / "h.jsonl")
    assert config["plugins"]["awesome"]["options"]["singleFile"] is True
    assert config["historyPath"] == str(tmp_path / "h.jsonl")
    assert default_history([tmp_path / "runs" / "a", tmp_path / "runs" / "b"]) == tmp_path / "runs" / ".allure-history.jsonl"


def test_sweep_params_map_to_flow_and_load_settings():
    import pytest
    from harness.sweep import SweepError, apply_params, parse_params
    (p,) = parse_params(["num_streams=1,2,4"])
    assert p.values == (1, 2, 4)
    drill = {"replication": {"replicator": "pyspark", "flows": [{"source": "a", "target": "b"}]},
             "load": {"producers": [{"rate": 10}]}}
    out = apply_params(drill, {"num_streams": 4, "linger.ms": 20, "replicator": "mirrormaker2", "rate": 500})
    assert out["replication"]["flows"][0]["settings"] == {"tasks.max": 4, "producer.linger.ms": 20}
    assert out["replication"]["replicator"] == "mirrormaker2" and out["load"]["producers"][0]["rate"] == 500
    assert "settings" not in drill["replication"]["flows"][0]  # the original is untouched
    with pytest.raises(SweepError):
        parse_params(["num_streams"])
    assert apply_params(drill, {"mode": "realtime"})["replication"]["mode"] == "realtime"
    with pytest.raises(SweepError, match="microbatch, realtime"):
        apply_params(drill, {"mode": "fast"})


def test_knee_is_where_one_more_step_adds_under_ten_percent():
    from harness.sweep import find_knee
    assert find_knee([(4, 200), (1, 100), (2, 190), (8, 205)]) == 2
    assert find_knee([(1, 100), (2, 200), (4, 400)]) == 4
    # a dip at 2 (a busy moment on a shared machine) does not stop the search at 1
    assert find_knee([(1, 5825), (2, 5156), (4, 6977), (8, 4754)]) == 4


def _sweep_point(streams, replicator, carried, bounded=False, error=None):
    from harness.sweep import SweepPoint
    return SweepPoint(params={"num_streams": streams, "replicator": replicator}, run_dir="/nowhere", passed=True,
                      replicated_records_s=carried, sustained_records_s=carried, produced_records_s=5000.0,
                      lag_bounded=bounded, final_lag=0 if bounded else 9000, latency_p50_ms=10, latency_p99_ms=90,
                      replicator_cpu_s=12.0, replicator_cpu_cores=0.8, lost=0, seconds=100.0,
                      load_avg=(3.0, 2.0, 1.0), error=error)


def test_sweep_recommendation_names_the_knee_and_the_headroom_per_line(tmp_path):
    from harness.sweep import Ceiling, SweepResult, parse_params
    params = parse_params(["replicator=pyspark,mirrormaker2", "num_streams=1,2,4"])
    points = [_sweep_point(1, "pyspark", 1000.0), _sweep_point(2, "pyspark", 1900.0), _sweep_point(4, "pyspark", 1950.0),
              _sweep_point(1, "mirrormaker2", 3000.0, bounded=True), _sweep_point(2, "mirrormaker2", None, error="boom")]
    result = SweepResult(tmp_path, params, points, Ceiling(8000.0, 4000.0, 1024, (1.0, 1.0, 1.0)))
    assert result.swept == "num_streams" and result.others == ["replicator"]  # the numeric axis, whatever the order
    rec = result.recommendation().splitlines()
    assert rec[0].startswith("replicator=pyspark: throughput stops growing at num_streams=2 (~1,900 records/s")
    assert "1,425-1,520 records/s" in rec[0]  # 75-80% of the knee's throughput
    assert "lower bound" in rec[1] and "replicator=mirrormaker2" in rec[1]  # it kept up: not saturated
    stalled = SweepResult(tmp_path, params, [_sweep_point(1, "pyspark", 0.0), _sweep_point(2, "pyspark", 0.0)], None)
    assert "nothing replicated while load ran" in stalled.recommendation()
    table = result.table()
    assert "FAILED: boom" in table and "GROWING (9000)" in table and "ceiling" in table


def test_sweep_resume_reads_points_and_ceiling_and_skips_torn_lines(tmp_path):
    from dataclasses import asdict
    import json
    from harness.sweep import Ceiling, SweepPoint, _read_jsonl
    pt = _sweep_point(1, "pyspark", 1000.0)
    path = tmp_path / "sweep.jsonl"
    path.write_text(json.dumps({"ceiling": asdict(Ceiling(1.0, 2.0, 10, (1.0, 2.0, 3.0)))}) + "\n"
                    + json.dumps(asdict(pt)) + "\n" + '{"params": {"num_str')
    rows = _read_jsonl(path)
    assert len(rows) == 2
    assert Ceiling.from_json(rows[0]["ceiling"]).records_s == 1.0
    assert SweepPoint.from_json(rows[1]) == pt


def test_sweep_cpu_meter_reads_own_time_of_processes_under_a_folder(tmp_path):
    import subprocess
    import sys
    import time
    from harness.sweep import CpuMeter
    busy = subprocess.Popen([sys.executable, "-c", "import time\nwhile time.process_time() < 0.6: pass"],
                            cwd=tmp_path)
    try:
        with CpuMeter(tmp_path, interval_s=0.2) as meter:
            busy.wait(60)
            time.sleep(0.5)
    finally:
        busy.kill()
    assert 0.1 < meter.cpu_s < 1.0  # its own 0.6 s, as last sampled; not the test's
    t0, t1 = meter.samples[0][0], meter.samples[-1][0]
    assert meter.cpu_between(t0, t1) == meter.samples[-1][1] - meter.samples[0][1]


def test_sweep_interrupted_keeps_finished_points_and_resume_skips_them(tmp_path, monkeypatch):
    import json
    from pathlib import Path
    import pytest
    from harness.sweep import Sweep, parse_params
    drill = Path(__file__).resolve().parents[2] / "scenarios" / "sweep-capacity.yaml"
    ran, interrupt_at = [], [2]

    def fake_point(self, run_dir, combo):  # the drill itself: a point, then Ctrl-C inside the second
        ran.append(combo["num_streams"])
        if combo["num_streams"] in interrupt_at:
            return None  # what _run_point returns when the drill was interrupted
        point = _sweep_point(combo["num_streams"], "pyspark", 1000.0 * combo["num_streams"])
        point.params = combo
        return point

    monkeypatch.setattr(Sweep, "_run_point", fake_point)
    logs = []
    sweep = Sweep(drill, parse_params(["num_streams=1,2,4"]), tmp_path / "s", measure_ceiling=False, log=logs.append)
    with pytest.raises(KeyboardInterrupt):
        sweep.run()
    rows = [json.loads(x) for x in (tmp_path / "s" / "sweep.jsonl").read_text().splitlines()]
    assert [r["params"]["num_streams"] for r in rows if "params" in r] == [1]
    assert "interrupted: 1 point(s) measured" in (tmp_path / "s" / "sweep.txt").read_text()
    assert (tmp_path / "s" / "sweep-throughput.png").exists()
    ran.clear()
    interrupt_at.clear()  # the resumed run is not interrupted
    result = Sweep(drill, parse_params(["num_streams=1,2,4"]), tmp_path / "s", measure_ceiling=False,
                   log=logs.append).run()
    assert ran == [2, 4] and [p.params["num_streams"] for p in result.points] == [1, 2, 4]


def test_saturated_rate_counts_only_seconds_that_started_with_work_queued():
    from types import SimpleNamespace

    from harness.checker.model import SecondSeries
    from harness.sweep import WARMUP_S, saturated_rate_of
    # replication starts at second 2; the backlog (lag >= 1000) lasts until second 14
    replicated = [0, 0] + [500] * WARMUP_S + [3000] * 8 + [200] * 5
    lag = [50_000] * 15 + [0] * 5
    series = SimpleNamespace(replicated=SecondSeries(100, tuple(replicated)), lag=SecondSeries(100, tuple(lag)))
    rate, seconds = saturated_rate_of(series)
    # seconds 107..115 start with a queue (lag at the end of 106..114): eight of 3000/s, one of 200/s
    assert seconds == 9 and rate == round((8 * 3000 + 200) / 9, 1)


def test_saturated_rate_is_absent_when_the_flow_kept_up():
    from types import SimpleNamespace

    from harness.checker.model import SecondSeries
    from harness.sweep import saturated_rate_of
    series = SimpleNamespace(replicated=SecondSeries(0, (100,) * 30), lag=SecondSeries(0, (40,) * 30))
    assert saturated_rate_of(series) == (None, 0)
    nothing = SimpleNamespace(replicated=SecondSeries(0, (0,) * 30), lag=SecondSeries(0, (5000,) * 30))
    assert saturated_rate_of(nothing) == (None, 0)


def test_a_render_of_runs_already_in_the_history_adds_no_trend_point(tmp_path):
    import json

    from reports.render import _drop_repeated_entry
    history = tmp_path / "h.jsonl"
    first = json.dumps({"uuid": "a", "testResults": {"k1": {"id": "r1"}}}) + "\n"
    history.write_text(first + json.dumps({"uuid": "b", "testResults": {"k1": {"id": "r1"}}}) + "\n")
    _drop_repeated_entry(history, [first])
    assert history.read_text() == first
    history.write_text(first + json.dumps({"uuid": "c", "testResults": {"k2": {"id": "r2"}}}) + "\n")
    _drop_repeated_entry(history, [first])
    assert len(history.read_text().splitlines()) == 2  # a new run: kept


def test_repeated_runs_use_the_median_run_for_the_knee_and_show_their_spread(tmp_path):
    from dataclasses import replace

    from harness.sweep import SweepResult, parse_params
    params = parse_params(["num_streams=1,2"])
    runs = {1: [4000.0, 6000.0, 5000.0], 2: [5200.0, 9000.0, 5100.0]}
    points = [replace(_sweep_point(n, "mirrormaker2", cap), params={"num_streams": n}, run=i + 1)
              for n, caps in runs.items() for i, cap in enumerate(caps)]
    result = SweepResult(tmp_path, params, points, None)
    assert [pt.capacity for pt in result.representative()] == [5000.0, 5200.0]  # one noisy 9,000 moves nothing
    rec = result.recommendation()
    assert "throughput stops growing at num_streams=1 (~5,000 records/s" in rec
    table = result.table()
    assert table.splitlines()[0].split()[:2] == ["num_streams", "run"]
    assert "num_streams=2: 3 runs, median 5,200.0, range 5,100.0-9,000.0 records/s" in table


def test_repeat_must_be_positive(tmp_path):
    import pytest as _pytest

    from harness.sweep import Sweep, SweepError, parse_params
    from pathlib import Path
    drill = Path(__file__).parents[2] / "scenarios" / "sweep-capacity.yaml"
    with _pytest.raises(SweepError, match="at least once"):
        Sweep(drill, parse_params(["num_streams=1"]), tmp_path, repeat=0)
