"""The sizing tutorial's sweep against clusters it did not start, with the replicator on Spark standalone.

`mirrordrill up` starts the secure (SASL_SSL, SCRAM-SHA-512) clusters the existing-cluster tests use
and writes a connection file; scenarios/sizing/sweep-existing.yaml gets its two `existing:` entries
replaced from that file, as docs/tutorials/sizing.md tells a team to do with its own, and the
tutorial's command line runs it: two points of the short profile through the harness's Kafka proxy
and a WAN link with a bandwidth limit. Every point names its bottleneck from its figures (the load
first, where it fell short of the rate asked), and the clusters hold afterwards what they held before.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path

import pytest
import yaml

from mirrordrill.harness.tools.sweep.points import LOAD_HELD
from mirrordrill.primitives.import_root import IMPORT_ROOT
from tests.conftest import processes_under, up_secure_clusters
from tests.integration.test_existing_clusters_run import footprint, run_cli

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
DRILL = REPO / "scenarios" / "sizing" / "sweep-existing.yaml"
PASSWORD = "sizing-sweep-test-pw"
CLUSTERS = {"md-size-primary": "primary", "md-size-dr": "dr"}  # the drill's name -> the connection file's
# the tutorial's command line, after the drill file
SWEEP = ["--param", "rate=300,600", "--param", "profile=short", "--no-ceiling", "--spark-master", "standalone"]
ALLOW = ["--allow-cluster", "md-size-primary", "--allow-cluster", "md-size-dr"]
KINDS = ("load", "replicator CPU", "WAN bandwidth", "target", "none", "unknown")
BUDGET_S = 600  # a hang guard; the suite-time aim (issue 46: at most 4 minutes) is measured, not asserted


def filled_drill(conn: dict, path: Path) -> Path:
    """The shipped drill with each cluster's existing: entry replaced by the connection file's."""
    doc = yaml.safe_load(DRILL.read_text())
    for name, conn_name in CLUSTERS.items():
        entry = conn["clusters"][conn_name]
        doc["clusters"][name]["existing"] = {"bootstrap_servers": entry["bootstrap_servers"],
                                             "security": entry["security"]}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_the_sizing_sweep_on_existing_clusters_names_each_points_bottleneck(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(IMPORT_ROOT), MIRRORDRILL_SECURE_PASSWORD=PASSWORD)
    up, workdir, conn_path, _ = up_secure_clusters(tmp_path, PASSWORD)
    try:
        conn = yaml.safe_load(conn_path.read_text())
        before = footprint(conn)
        drill = filled_drill(conn, tmp_path / "sweep-existing.yaml")
        planned = run_cli("plan", str(drill), cwd=tmp_path, env=env)
        assert planned.returncode == 0, planned.stdout
        out = tmp_path / "sweep"
        refused = run_cli("sweep", str(drill), *SWEEP, "--out", str(out), cwd=tmp_path, env=env)
        assert refused.returncode == 2 and "--allow-cluster md-size-primary" in refused.stdout, refused.stdout
        assert not out.exists()  # refused before anything started
        started = time.monotonic()
        swept = run_cli("sweep", str(drill), *SWEEP, *ALLOW, "--out", str(out), cwd=tmp_path, env=env,
                        timeout=BUDGET_S)
        took = time.monotonic() - started
        print(f"sweep of two points on existing clusters: {took:.0f} s")
        assert swept.returncode == 0, swept.stdout[-6000:]
        assert PASSWORD not in swept.stdout
        rows = [json.loads(line) for line in (out / "sweep.jsonl").read_text().splitlines()]
        points = {row["params"]["rate"]: row for row in rows if "run_dir" in row}  # the header has none
        assert sorted(points) == [300, 600] and not any(p["error"] for p in points.values()), points
        for rate, point in points.items():
            summary = json.loads((Path(point["run_dir"]) / "summary.json").read_text())
            assert summary["passed"], (rate, [e for e in summary["expectations"] if not e["passed"]])
            assert summary["environment"]["spark_master"].startswith("standalone (spark://127.0.0.1:"), summary["environment"]
            # the proxy sat in every path: its log is the "broker" log of each existing cluster
            assert all("kafka-proxy-" in log for log in summary["logs"]["brokers"].values()), summary["logs"]
            assert point["wan_bandwidth_kb_s"] == 400
        text = (out / "sweep.txt").read_text()
        for rate, point in points.items():
            found = re.search(rf"^bottleneck at rate={rate}, profile=short: ({'|'.join(KINDS)}) \((.+)\)$", text, re.M)
            assert found, text
            short = point["produced_records_s"] < LOAD_HELD * point["asked_records_s"]
            # the load is judged first: a point whose load fell short measured the load, whatever else was full
            assert (found[1] == "load") == short, (rate, found[0], point["produced_records_s"])
        assert "bottleneck at rate=" in swept.stdout  # the recommendation names the one it sizes on
        assert processes_under(out) == []
        assert footprint(conn) == before, "the sweep left topics or groups behind"
        up.send_signal(signal.SIGINT)
        assert up.wait(90) == 130
    finally:
        if up.poll() is None:
            up.kill()
    assert processes_under(workdir) == []
