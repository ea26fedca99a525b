"""Report building blocks that need no cluster: fault windows, redaction, verdict, configuration."""

from __future__ import annotations

from mirrordrill.harness.drill.results import DrillSummary
from mirrordrill.loadgen.histories.records import TimelineEvent
from mirrordrill.reports.attachments import redact_yaml
from mirrordrill.reports.render import allure_config, default_history
from mirrordrill.reports.summary_html import summary_html
from mirrordrill.reports.timeline import fault_windows


def _event(name, kind, start, end, outcome="ok"):
    return TimelineEvent(name=name, kind=kind, start_ts_ms=start, end_ts_ms=end, outcome=outcome, detail="")


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


def test_a_render_of_runs_already_in_the_history_adds_no_trend_point(tmp_path):
    import json

    from mirrordrill.reports.render import _drop_repeated_entry
    history = tmp_path / "h.jsonl"
    first = json.dumps({"uuid": "a", "testResults": {"k1": {"id": "r1"}}}) + "\n"
    history.write_text(first + json.dumps({"uuid": "b", "testResults": {"k1": {"id": "r1"}}}) + "\n")
    _drop_repeated_entry(history, [first])
    assert history.read_text() == first
    history.write_text(first + json.dumps({"uuid": "c", "testResults": {"k2": {"id": "r2"}}}) + "\n")
    _drop_repeated_entry(history, [first])
    assert len(history.read_text().splitlines()) == 2  # a new run: kept
