"""The run folder explains itself (issue 16): exit codes, the summary's new fields, the rerun
line, the drill's own log, unmet step conditions, whole logs in the report. No cluster needed."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shlex
from pathlib import Path

import pytest

from mirrordrill.harness.cli.commands import (
    EXIT_FAILED,
    EXIT_HARNESS,
    EXIT_INTERRUPTED,
    EXIT_OK,
    build_parser,
    drill_exit_code,
    main,
)
from mirrordrill.harness.drill import run_facts
from mirrordrill.harness.drill.conditions import unmet_conditions
from mirrordrill.harness.drill.drill_log import DrillLog
from mirrordrill.harness.drill.results import SCHEMA, DrillResults, DrillSummary, Logs, load_results, save_results
from mirrordrill.harness.drill.run_folder import DRILL_LOG_FILE
from mirrordrill.loadgen.histories.records import TimelineEvent
from mirrordrill.reports.attachments import drill_log, log_files
from mirrordrill.reports.summary_html import summary_html

BEFORE = Path(__file__).parent / "fixtures" / "summary-before-schema.json"


def _summary(**changes) -> DrillSummary:
    return DrillSummary.model_validate({**json.loads(BEFORE.read_text()), "schema": SCHEMA, **changes})


@pytest.mark.parametrize("changes, code", [
    (dict(passed=True), EXIT_OK),
    (dict(passed=False), EXIT_FAILED),  # an expectation failed: the replicator's result
    (dict(passed=False, error="RuntimeError: cluster primary not ready"), EXIT_HARNESS),
    (dict(passed=False, error="ValueError: check failed", interrupted=True), EXIT_INTERRUPTED),
])
def test_exit_code_tells_a_failed_expectation_from_a_failed_harness(changes, code):
    assert drill_exit_code(_summary(**changes)) == code
    assert (EXIT_OK, EXIT_FAILED, EXIT_HARNESS, EXIT_INTERRUPTED) == (0, 1, 3, 130)


def test_help_lists_test_and_the_exit_codes(capsys):
    help_text = build_parser().format_help()
    assert "test" in help_text and "exit codes" in help_text and "3 the harness failed" in help_text
    assert main(["test", "-q", "-k", "x"]) == 2  # pytest options are not rejected as ours
    assert "./mirrordrill test" in capsys.readouterr().err


def test_new_summary_fields_round_trip_through_the_run_folder(tmp_path):
    timeline = [TimelineEvent(name="kill", kind="kill_broker", start_ts_ms=5, end_ts_ms=6, outcome="ok", detail="",
                              condition="lag <= 0 on primary->dr (waited up to 30s)", condition_held=False,
                              condition_checked_ts_ms=4),
                TimelineEvent(name="heal", kind="heal", start_ts_ms=7, end_ts_ms=8, outcome="ok", detail="",
                              condition="")]
    summary = _summary(started_ms=1000, load_started_ms=2000, replicator_mode="realtime", drill_sha256="ab" * 32,
                       versions={"kafka": "4.1.0", "spark": "4.2.0"}, timeline=timeline,
                       logs=Logs(drill=str(tmp_path / DRILL_LOG_FILE)))
    save_results(tmp_path, DrillResults(summary))
    raw = json.loads((tmp_path / "summary.json").read_text())
    assert raw["started_ms"] == 1000 and raw["load_started_ms"] == 2000 and raw["replicator_mode"] == "realtime"
    assert raw["logs"]["drill"].endswith("drill.log")
    assert raw["timeline"][0]["condition_held"] is False and raw["timeline"][0]["condition_checked_ts_ms"] == 4
    assert "condition" not in raw["timeline"][1]  # an event without a `when` has none of the three keys
    loaded = load_results(tmp_path)
    assert loaded.summary == summary and loaded.summary.timeline[1].condition is None  # "" read as no condition
    assert loaded.started_ms == 1000
    assert [e.name for e in loaded.summary.unmet_conditions()] == ["kill"]


def test_unmet_conditions_are_said_in_the_console_and_the_report():
    entry = TimelineEvent(name="kill dr/1", kind="kill_broker", start_ts_ms=5, end_ts_ms=6, outcome="ok", detail="",
                          condition="lag <= 0 on primary->dr (waited up to 30s)", condition_held=False,
                          condition_checked_ts_ms=4)
    held = dataclasses.replace(entry, name="heal", condition_held=True)
    summary = _summary(timeline=[entry, held])
    (line,) = unmet_conditions(summary)
    assert "kill dr/1" in line and "lag <= 0 on primary->dr" in line and "not the replicator's alone" in line
    html = summary_html(summary)
    assert "conditions not met" in html and "kill dr/1" in html and "heal" not in html.split("conditions not met")[1]


def test_rerun_runs_the_folders_own_copy_of_the_drill_file(tmp_path):
    out = tmp_path / "run 1"
    line = run_facts.rerun_line(out, "mirrormaker2")
    argv = shlex.split(line)
    assert argv[:3] == ["mirrordrill", "run", str(out / "scenario.yaml")]
    assert argv[3:] == ["--replicator", "mirrormaker2", "--out", str(out) + "-rerun"]


def test_versions_mode_and_hash(tmp_path):
    v = run_facts.versions("pyspark")
    assert set(v) == {"mirrordrill", "kafka", "spark", "replicator"} and v["spark"] in v["replicator"]
    assert v["kafka"] in run_facts.versions("mirrormaker2")["replicator"]
    assert run_facts.replicator_mode("pyspark", None) == "microbatch"
    assert run_facts.replicator_mode("pyspark", "realtime") == "realtime"
    assert run_facts.replicator_mode("mirrormaker2", "realtime") == "at-least-once"  # mode is pyspark's
    assert run_facts.replicator_mode("mirrormaker2", None, mm2_exactly_once=True) == "exactly-once"
    assert run_facts.replicator_mode("command", None) == "n/a"
    f = tmp_path / "d.yaml"
    f.write_bytes(b"name: x\n")
    assert run_facts.sha256_of(f) == hashlib.sha256(b"name: x\n").hexdigest()


def test_drill_log_keeps_every_line_and_still_echoes(tmp_path):
    echoed = []
    log = DrillLog(tmp_path / DRILL_LOG_FILE, echoed.append)
    log("condition lag <= 0 not met within 30s; running the step anyway")
    log("two\nlines")
    log.close()
    log("after close")  # the console still gets it
    lines = (tmp_path / DRILL_LOG_FILE).read_text().splitlines()
    assert [line.split(" ", 1)[1] for line in lines] == ["condition lag <= 0 not met within 30s; running the step anyway",
                                                   "two", "lines"]
    assert all(line.split(" ", 1)[0].isdigit() and len(line.split(" ", 1)[0]) == 13 for line in lines)  # epoch ms
    assert echoed[-1] == "after close" and len(echoed) == 3


def test_the_report_attaches_whole_logs_and_says_when_one_is_capped(tmp_path):
    small, big, drill = tmp_path / "broker.log", tmp_path / "replicator.log", tmp_path / "drill.log"
    small.write_text("".join(f"line {i}\n" for i in range(5000)))  # far more than 200 lines
    big.write_bytes(b"x" * 50 + b"\n" + b"y" * 3000 + b"\n")
    drill.write_text("1 started\n")
    run = DrillResults(_summary(logs=Logs(brokers={"primary/1": str(small)}, replicator={"r": str(big)},
                                          drill=str(drill), load=[str(tmp_path / "never-written.log")])))
    by_title = {a.name: a.body for a in log_files(run, cap_bytes=1000)}
    assert by_title["drill log"] == b"1 started\n"  # under the cap: whole, title unchanged
    (capped,) = [t for t in by_title if t.startswith("replicator r log")]
    assert "(last " in capped
    body = by_title[capped]
    assert body.startswith(b"[mirrordrill: ") and b"whole file is in the run folder" in body
    assert body.split(b"\n", 1)[1] == b"y" * 999 + b"\n"  # the last 1000 bytes, as they are
    assert not any(t.startswith("load log") for t in by_title)  # a log never written is left out
    whole = {a.name: a.body for a in log_files(run)}  # default cap: 20 MB
    assert whole["broker primary/1 log"] == small.read_bytes()
    assert [a.name for a in drill_log(run)] == ["drill log"]
