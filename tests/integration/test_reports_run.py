"""Allure results and plots written from a real (tiny) drill run."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.integration.report_fixtures import tiny_run_dir

pytestmark = pytest.mark.integration


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory, artifacts):
    return tiny_run_dir(tmp_path_factory.getbasetemp() / "reports", artifacts)


def _results(folder):
    return [json.loads(p.read_text()) for p in folder.glob("*-result.json")]


def test_the_engine_wrote_allure_results_for_the_run(tiny_run):
    (result,) = _results(tiny_run / "allure-results")
    labels = {(label["name"], label["value"]) for label in result["labels"]}
    assert {("suite", "tiny-report"), ("replicator", "mirrormaker2"), ("scenario", "tiny-report")} <= labels
    summary = json.loads((tiny_run / "summary.json").read_text())
    assert result["status"] == ("passed" if summary["passed"] else "failed")


def test_timeline_and_expectations_are_steps(tiny_run):
    from mirrordrill.reports.allure_results import write_allure_results
    (result,) = _results(write_allure_results(tiny_run))
    steps = {s["name"]: s for s in result["steps"]}
    for name in ("blackhole primary<->dr", "heal primary<->dr", "drain"):
        assert steps[name]["status"] == "passed"
        assert steps[name]["start"] <= steps[name]["stop"]
    assert steps["blackhole primary<->dr"]["stop"] < steps["heal primary<->dr"]["start"]
    assert steps["expect lost[primary->dr] == 0"]["status"] == "passed"
    actual = {p["name"]: p["value"] for p in steps["expect lost[primary->dr] == 0"]["parameters"]}
    assert actual["actual"] == "0"


def test_plots_are_real_pngs_of_the_run(tiny_run):
    import matplotlib.image

    from mirrordrill.reports.allure_results import write_allure_results
    folder = write_allure_results(tiny_run)
    (result,) = _results(folder)
    pngs = {a["name"]: folder / a["source"] for a in result["attachments"] if a["type"] == "image/png"}
    assert set(pngs) == {"primary->dr: lag over time", "primary->dr: replication latency over time",
                         "primary->dr: replication latency distribution",
                         "primary->dr: throughput: produced vs replicated"}
    for path in pngs.values():
        height, width, _ = matplotlib.image.imread(path).shape
        assert width > 500 and height > 200
    # the overview embeds the same plots and the checker's figures
    assert result["descriptionHtml"].count("data:image/png;base64,") == 4
    assert "lost=0" in result["descriptionHtml"]


def test_summary_scenario_and_config_attached(tiny_run):
    # (a drill file can no longer hold a secret in a flow's settings: validate refuses it, and the
    # redaction of a secure drill's replicator configuration is searched by test_secret_leaks.py)
    from mirrordrill.reports.allure_results import write_allure_results
    folder = write_allure_results(tiny_run)
    (result,) = _results(folder)
    names = {a["name"] for a in result["attachments"]}
    assert {"summary", "summary.json", "scenario.yaml", "replicator configuration (secrets redacted)"} <= names
    by_name = {a["name"]: (folder / a["source"]).read_text() for a in result["attachments"] if a["type"] != "image/png"}
    assert "primary->dr.enabled" in by_name["replicator configuration (secrets redacted)"]
    assert "VIOLATED" not in by_name["summary"] or not json.loads(by_name["summary.json"])["passed"]


def test_a_failed_run_carries_its_logs(tiny_run, tmp_path):
    from mirrordrill.reports.allure_results import write_allure_results
    failed = tmp_path / "failed-run"
    shutil.copytree(tiny_run, failed, ignore=shutil.ignore_patterns("allure-results", "report", "env"))
    summary = json.loads((failed / "summary.json").read_text())
    summary["passed"] = False
    summary["expectations"][0].update(passed=False, actual=3)
    (failed / "summary.json").write_text(json.dumps(summary))
    (result,) = _results(write_allure_results(failed))
    assert result["status"] == "failed"
    logs = [a["name"] for a in result["attachments"] if a["type"] == "text/plain" and "log" in a["name"]]
    # the logs stayed in the original folder (summary.json names them by absolute path)
    assert any(n.startswith("broker primary/1 log") for n in logs)
    assert any(n.startswith("replicator ") for n in logs)
    assert any(n.startswith("load log") for n in logs)


def test_history_id_is_stable_across_runs_of_the_same_drill(tiny_run):
    from mirrordrill.reports.allure_results import write_allure_results
    first = _results(write_allure_results(tiny_run))[0]
    second = _results(write_allure_results(tiny_run))[0]
    assert first["historyId"] == second["historyId"] and first["uuid"] != second["uuid"]


def test_report_renders_from_saved_results_alone(tiny_run, tmp_path, capsys):
    """The report reads the results the drill saved, never the histories or the scenario."""
    from mirrordrill.harness.cli.commands import EXIT_OK, main
    saved = tmp_path / "saved-only"
    shutil.copytree(tiny_run, saved, ignore=shutil.ignore_patterns("allure-results", "report", "env"))
    shutil.rmtree(saved / "histories")
    (saved / "scenario.yaml").unlink()
    assert main(["report", str(saved), "--history", str(tmp_path / "history.jsonl")]) == EXIT_OK, capsys.readouterr()
    html = saved / "report" / "index.html"
    assert html.is_file() and html.stat().st_size > 100_000
    assert len(json.loads((saved / "report" / "test-results.json").read_text())["byId"]) == 1
    (result,) = _results(saved / "allure-results")
    pngs = [a for a in result["attachments"] if a["type"] == "image/png"]
    assert len(pngs) == 4 and all((saved / "allure-results" / a["source"]).stat().st_size > 10_000 for a in pngs)
    assert result["descriptionHtml"].count("data:image/png;base64,") == 4 and "lost=0" in result["descriptionHtml"]
    names = {a["name"] for a in result["attachments"]}
    assert {"summary", "summary.json"} <= names and "scenario.yaml" not in names
