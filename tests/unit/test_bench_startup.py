"""The start-up bench's table: medians per drill and backend, failed starts named, not averaged in."""

from __future__ import annotations

import json

import pytest

from mirrordrill.harness.tools.bench.startup import StartupBench, StartupSample, bench_startup


def _bench(tmp_path) -> StartupBench:
    b = StartupBench(tmp_path, runs=3, backends=("processes", "docker"))
    for r, (p, d) in enumerate([(10.0, 30.0), (12.0, 20.0), (50.0, 25.0)], start=1):
        b.samples.append(StartupSample("quickstart", "processes", r, p, 2.0, "1.0"))
        b.samples.append(StartupSample("quickstart", "docker", r, d, 4.0, "1.0"))
    b.samples.append(StartupSample("fan-out", "processes", 1, 11.0, 1.0, "1.0"))
    b.samples.append(StartupSample("fan-out", "docker", 1, None, None, "1.0", error="EngineError: no engine"))
    return b


def test_medians_per_drill_and_backend_leave_failed_starts_out(tmp_path):
    b = _bench(tmp_path)
    assert b.median("quickstart", "processes", "start_s") == 12.0
    assert b.median("quickstart", "docker", "start_s") == 25.0
    assert b.median("quickstart", "docker", "stop_s") == 4.0
    assert b.median("fan-out", "docker", "start_s") is None


def test_the_table_puts_backends_side_by_side_and_names_each_failed_start(tmp_path):
    md = _bench(tmp_path).markdown()
    assert "| drill | processes start s | processes stop s | docker start s | docker stop s | failed starts |" in md
    assert "| quickstart | 12.0 | 2.0 | 25.0 | 4.0 | 0 |" in md
    assert "| fan-out | 11.0 | 1.0 | - | - | docker round 1: EngineError: no engine |" in md


def test_saved_samples_read_back(tmp_path):
    js, md = _bench(tmp_path).save()
    data = json.loads(js.read_text())
    assert len(data["samples"]) == 8 and data["backends"] == ["processes", "docker"]
    assert md.read_text().startswith("Lab start-up and tear-down, median of 3 round(s)")


def test_fewer_than_one_round_is_refused(tmp_path):
    with pytest.raises(ValueError, match="--runs must be at least 1"):
        bench_startup([], 0, tmp_path)
