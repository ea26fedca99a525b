"""Report building blocks that need no cluster: fault windows, redaction, verdict, configuration."""

from __future__ import annotations

from reports.attachments import redact_yaml
from reports.render import allure_config, default_history
from reports.summary_html import summary_html
from reports.timeline import fault_windows


def _event(name, kind, start, end, outcome="ok"):
    return {"name": name, "kind": kind, "start_ts_ms": start, "end_ts_ms": end, "outcome": outcome, "detail": ""}


def test_a_fault_lasts_until_the_step_that_ends_it():
    timeline = [_event("blackhole a<->b", "blackhole", 1000, 1100), _event("pause_broker a/1", "pause_broker", 1500, 1600),
                _event("heal a<->b", "heal", 5000, 5150), _event("drain", "drain", 9000, 9500)]
    windows = {w.label: w for w in fault_windows(timeline, end_ms=20_000)}
    assert (windows["blackhole a<->b"].start_ms, windows["blackhole a<->b"].end_ms) == (1000, 5150)
    assert windows["pause_broker a/1"].end_ms == 20_000  # never resumed: lasts to the end
    assert not windows["drain"].is_fault and windows["drain"].end_ms == 9500
    assert "heal a<->b" not in windows


def test_heal_of_another_link_does_not_end_a_fault():
    timeline = [_event("blackhole a<->b", "blackhole", 0, 10), _event("heal a<->c", "heal", 50, 60)]
    (w,) = fault_windows(timeline, end_ms=99)
    assert w.end_ms == 99


def test_scenario_secrets_are_redacted_in_block_and_flow_style():
    text = "settings: {consumer.ssl.key.password: s3cret, tasks.max: 2}\nsasl.jaas.config: x y z\ntopics: [a]\n"
    out = redact_yaml(text)
    assert "s3cret" not in out and "x y z" not in out
    assert "tasks.max: 2" in out and "topics: [a]" in out


def test_summary_table_marks_violations():
    summary = {"scenario": "s", "replicator": "r", "passed": False, "flows": [
        {"source": "a", "target": "b", "acked": 10, "replicated": 9, "lost": 1, "duplicates": 0, "reordered": 0,
         "corrupted": 0, "unexpected": 0, "latency_ms": {"p50": 5, "p90": 6, "p99": 7, "max": 8},
         "throughput_records_s": 1.5, "throughput_mb_s": 0.1}],
        "expectations": [{"name": "lost[a->b] == 0", "passed": False, "actual": 1, "limit": 0}]}
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


def test_knee_is_where_one_more_step_adds_under_ten_percent():
    from harness.sweep import find_knee
    assert find_knee([(4, 200), (1, 100), (2, 190), (8, 205)]) == 2
    assert find_knee([(1, 100), (2, 200), (4, 400)]) == 4
