"""The figures a drill report opens on: verdicts and headline figures as Allure metrics."""

from __future__ import annotations

from pathlib import Path

from mirrordrill.harness.drill.results import DrillResults, DrillSummary
from mirrordrill.reports.headline import headline_metrics, run_labels, verdict_line
from mirrordrill.reports.render import _title, allure_config

_SAMPLE_KINDS = ("lost", "duplicates", "reordered", "misplaced", "corrupted", "unexpected", "uncertain_delivered")


def _flow(source: str, target: str, lost: int, duplicates: int, p50: int | None, p99: int | None) -> dict:
    return {"source": source, "target": target, "topics": ["orders"], "name": f"{source}->{target}", "via": [],
            "by_topic": {}, "events": [], "samples": {k: [] for k in _SAMPLE_KINDS},
            "acked": 1000, "replicated": 1000 - lost, "lost": lost, "duplicates": duplicates, "reordered": 0,
            "corrupted": 0, "unexpected": 0, "latency_ms": {"p50": p50, "p90": p99, "p99": p99, "max": p99},
            "throughput_records_s": 50.0, "throughput_mb_s": 0.1, "misplaced": 0, "uncertain_delivered": 0,
            "source_duplicates": 0, "replicated_bytes": 0, "latency_count": 10}


_FAILOVER = {"group": "billing", "strategy": "translated", "primary": "primary", "dr": "dr",
             "failure_ts_ms": 1767225610000, "available": 900, "processed": 890, "skipped": 0, "reprocessed": 14,
             "reprocessed_across_failover": 14, "rto_s": 4.2, "rpo_records": 3, "rpo_window_s": 0.5,
             "rpo_first_ack_ts_ms": None, "rpo_last_ack_ts_ms": None, "skipped_sample": [], "rpo_sample": []}


def _run(replicator: str, folder: str, lost: int, rto_s: float | None = 4.2) -> DrillResults:
    resumed = rto_s is not None and rto_s <= 30
    expectations = [{"name": "lost[primary->dr] == 0", "passed": lost == 0, "actual": lost, "limit": 0, "op": "=="},
                    {"name": "rto_s[billing] <= 30", "passed": resumed, "actual": rto_s, "limit": 30, "op": "<="}]
    summary = DrillSummary.model_validate({
        "schema": 1, "scenario": "region-loss", "replicator": replicator, "passed": lost == 0 and resumed,
        "started_at": "2026-01-01T00:00:00+00:00", "duration_s": 60.0, "interrupted": False, "error": None,
        "flows": [_flow("primary", "dr", lost, 12, 41, 240), _flow("dr", "primary", 0, 0, None, None)],
        "failovers": [{**_FAILOVER, "rto_s": rto_s}], "failbacks": [], "expectations": expectations,
        "timeline": [], "logs": {"brokers": {}}, "rerun": "mirrordrill run region-loss.yaml"})
    return DrillResults(summary, {}, Path("/runs") / folder)


def _rows(metrics: list[dict]) -> dict[tuple[str, str], tuple[float, str]]:
    return {(m["groupTitle"], m["title"]): (m["value"], m["unit"]) for m in metrics}


def test_each_run_opens_with_its_verdict_and_the_expectations_it_violated():
    passed, failed = _run("mirrormaker2", "q1", lost=0), _run("pyspark", "q1-pyspark", lost=3)
    rows = _rows(headline_metrics([passed, failed]))
    assert rows[("Verdict", "region-loss [mirrormaker2]: PASSED")] == (0, "violated")
    assert rows[("Verdict", "region-loss [pyspark]: FAILED: lost[primary->dr] == 0 (actual 3)")] == (1, "violated")
    # Allure orders the tables by key: the verdicts come before every figure
    keys = [m["key"] for m in headline_metrics([passed, failed])]
    assert sorted(keys)[:2] == [k for k in keys if k.startswith("1 verdict")]


def test_flows_and_failovers_show_the_headline_figures_of_every_run_side_by_side():
    rows = _rows(headline_metrics([_run("mirrormaker2", "a", lost=0), _run("pyspark", "b", lost=3)]))
    flow = "flow primary->dr"
    assert rows[(flow, "lost · mirrormaker2")] == (0, "records")
    assert rows[(flow, "lost · pyspark")] == (3, "records")
    assert rows[(flow, "duplicates · pyspark")] == (12, "records")
    assert rows[(flow, "p50 latency · pyspark")] == (41, "ms") and rows[(flow, "p99 latency · pyspark")] == (240, "ms")
    group = "failover of consumer group billing (translated, primary->dr)"
    assert rows[(group, "RTO · pyspark")] == (4.2, "s") and rows[(group, "RPO · pyspark")] == (3, "records")
    assert rows[(group, "reprocessed · mirrormaker2")] == (14, "records")
    # a flow without latency samples has no latency row (Allure takes numbers only), its counts stay
    assert ("flow dr->primary", "p50 latency · pyspark") not in rows and ("flow dr->primary", "lost · pyspark") in rows


def test_keys_follow_a_drill_across_reports_and_tell_two_runs_of_one_replicator_apart():
    q1, q2 = _run("mirrormaker2", "q1", lost=0), _run("mirrormaker2", "q2", lost=3)
    alone = {m["key"] for m in headline_metrics([q1])}
    assert alone == {m["key"] for m in headline_metrics([q2])}  # next quarter's report extends the same trend
    assert run_labels([q1, q2]) == ["mirrormaker2 q1", "mirrormaker2 q2"]
    both = headline_metrics([q1, q2])
    assert len({m["key"] for m in both}) == len(both)  # one row per run, never averaged together
    assert len({m["id"] for m in both}) == len(both)


def test_a_failover_whose_applications_never_resumed_has_no_rto_row_but_fails_the_verdict():
    run = _run("pyspark", "x", lost=0, rto_s=None)
    rows = _rows(headline_metrics([run]))
    group = "failover of consumer group billing (translated, primary->dr)"
    assert (group, "RTO · pyspark") not in rows and rows[(group, "RPO · pyspark")] == (3, "records")
    assert verdict_line(run) == ("region-loss [pyspark]: FAILED: rto_s[billing] <= 30 (actual None); "
                                 "consumer group billing never resumed on dr")


def test_the_report_opens_on_the_metrics_and_its_title_carries_the_verdicts(tmp_path):
    assert allure_config("x", tmp_path, tmp_path / "h")["plugins"]["awesome"]["options"].get("defaultSection") is None
    options = allure_config("x", tmp_path, tmp_path / "h", opens_on_metrics=True)["plugins"]["awesome"]["options"]
    assert options["defaultSection"] == "metrics"
    title = _title([_run("mirrormaker2", "a", lost=0), _run("pyspark", "b", lost=3)])
    assert title == "mirrordrill: region-loss [mirrormaker2] PASSED, region-loss [pyspark] FAILED"
