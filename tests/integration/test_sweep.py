"""A capacity sweep on real clusters: two points of a tiny drill, the outputs, and a resume that skips them."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from mirrordrill.harness.tools.sweep.params import SweepError, parse_params
from mirrordrill.harness.tools.sweep.run import Sweep
from mirrordrill.reports.sweep_hooks import SweepReports
from tests.conftest import processes_under

pytestmark = pytest.mark.integration

TINY_SWEEP_DRILL = """\
name: tiny-sweep
clusters:
  primary: {brokers: 1}
  dr: {brokers: 1}
topics:
  - {name: capacity, cluster: primary, partitions: 2}
replication:
  replicator: mirrormaker2
  flows:
    - {source: primary, target: dr, topics: [capacity]}
load:
  backlog:
    - {cluster: primary, topic: capacity, records: 5000, record_size: 256}
  producers:
    - {name: capacity, cluster: primary, topics: [capacity], rate: 300, record_size: {fixed: 256}}
duration: 12s
drain_timeout: 15s
expectations:
  corrupted: 0
"""


@pytest.mark.timeout(900)  # about 3 minutes on an idle 2-core machine; much more when it is shared
def test_two_point_sweep_writes_table_plot_recommendation_and_resumes(artifacts, tmp_path):
    drill = tmp_path / "tiny-sweep.yaml"
    drill.write_text(TINY_SWEEP_DRILL)
    out = tmp_path / "sweep"
    logs: list[str] = []
    params = parse_params(["num_streams=1,2"])

    result = Sweep(drill, params, out, measure_ceiling=False, log=logs.append, reports=SweepReports()).run()

    rows = [json.loads(line) for line in (out / "sweep.jsonl").read_text().splitlines()]
    points = [r for r in rows if "params" in r]
    assert [p["params"] for p in points] == [{"num_streams": 1}, {"num_streams": 2}]
    for p in points:
        assert p["error"] is None, p
        assert p["sustained_records_s"] > 0 and p["replicated_records_s"] > 0
        assert p["produced_records_s"] is None  # a drill with a backlog offers no rate to compare with
        assert p["replicator_cpu_s"] > 0
        assert p["load_avg"] and len(p["load_avg"]) == 3
        # the backlog written before the replicator started is in the ledger and was replicated
        flow = json.loads((Path(p["run_dir"]) / "summary.json").read_text())["flows"][0]
        assert flow["acked"] >= 5000 and flow["lost"] == 0 and flow["unexpected"] == 0
    assert len(result.points) == 2 and result.ceiling is None and not result.interrupted
    text = (out / "sweep.txt").read_text()
    assert "num_streams" in text and "carried/s" in text
    # a flow that kept up at every point has no knee (its figures are lower bounds); else the knee is named
    assert ("throughput stops growing at num_streams=" in text or "no knee" in text) and "75-80%" in text
    assert text.startswith(result.table()) and result.recommendation() in text
    png = out / "sweep-throughput.png"
    assert result.plot == png and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert any("[1/2] num_streams=1: running the drill" in m for m in logs)
    assert any("records/s carried" in m for m in logs)
    # each point is its own test in the Allure results, and the sweep has one of its own
    first = result.run_dirs[0] / "allure-results"
    assert (first / "sweep-result.json").exists()
    named = [json.loads(f.read_text())["name"] for f in first.glob("*-result.json")]
    assert any("sweep num_streams=1" in n for n in named)
    assert processes_under(out) == []  # every process the sweep started has been stopped

    # A resumed sweep keeps what it measured and runs nothing again.
    summaries = {d: (d / "summary.json").stat().st_mtime for d in result.run_dirs}
    logs.clear()
    t0 = time.monotonic()
    again = Sweep(drill, params, out, measure_ceiling=False, log=logs.append, reports=SweepReports()).run()
    assert time.monotonic() - t0 < 30
    assert sum(": already measured (" in m for m in logs) == 2
    assert [p.capacity for p in again.points] == [p.capacity for p in result.points]
    assert {d: (d / "summary.json").stat().st_mtime for d in again.run_dirs} == summaries
    assert len([r for r in map(json.loads, (out / "sweep.jsonl").read_text().splitlines()) if "params" in r]) == 2

    # ...and refuses to mix in points of a drill that changed since.
    drill.write_text(TINY_SWEEP_DRILL.replace("rate: 300", "rate: 400"))
    with pytest.raises(SweepError, match="another version of the drill"):
        Sweep(drill, params, out, measure_ceiling=False, log=logs.append, reports=SweepReports()).run()
