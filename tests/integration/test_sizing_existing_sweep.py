"""The sizing tutorial's sweep against clusters it did not start, with the replicator on Spark standalone.

`mirrordrill up` starts the secure (SASL_SSL, SCRAM-SHA-512) clusters the existing-cluster tests use
and writes a connection file; scenarios/sizing/sweep-existing.yaml gets its two `existing:` entries
replaced from that file, as docs/tutorials/sizing.md tells a team to do with its own, and the
tutorial's command line runs it: two points of the short profile through the harness's Kafka proxy
and a 400 KB/s WAN link. The sweep must name the link as the bottleneck where the offered bytes
exceed it, and not where the flow kept up; the clusters hold afterwards what they held before.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import processes_under, up_secure_clusters
from tests.integration.test_existing_clusters_run import footprint, run_cli

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
DRILL = REPO / "scenarios" / "sizing" / "sweep-existing.yaml"
PASSWORD = "sizing-sweep-test-pw"
CLUSTERS = {"md-size-primary": "primary", "md-size-dr": "dr"}  # the drill's name -> the connection file's
# the tutorial's command line, after the drill file
SWEEP = ["--param", "rate=300,1200", "--param", "profile=short", "--no-ceiling", "--spark-master", "standalone"]
ALLOW = ["--allow-cluster", "md-size-primary", "--allow-cluster", "md-size-dr"]
BUDGET_S = 600  # the done-when of issue 46: two points, short profile, at most 4 minutes


def filled_drill(conn: dict, path: Path) -> Path:
    """The shipped drill with each cluster's existing: entry replaced by the connection file's."""
    doc = yaml.safe_load(DRILL.read_text())
    for name, conn_name in CLUSTERS.items():
        entry = conn["clusters"][conn_name]
        doc["clusters"][name]["existing"] = {"bootstrap_servers": entry["bootstrap_servers"],
                                             "security": entry["security"]}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_the_sizing_sweep_on_existing_clusters_names_the_wan_where_the_link_is_full(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO), MIRRORDRILL_SECURE_PASSWORD=PASSWORD)
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
        assert sorted(points) == [300, 1200] and not any(p["error"] for p in points.values()), points
        for rate, point in points.items():
            summary = json.loads((Path(point["run_dir"]) / "summary.json").read_text())
            assert summary["passed"], (rate, [e for e in summary["expectations"] if not e["passed"]])
            assert summary["environment"]["spark_master"].startswith("standalone (spark://127.0.0.1:"), summary["environment"]
            # the proxy sat in every path: its log is the "broker" log of each existing cluster
            assert all("kafka-proxy-" in log for log in summary["logs"]["brokers"].values()), summary["logs"]
            assert point["wan_bandwidth_kb_s"] == 400
        text = (out / "sweep.txt").read_text()
        assert "bottleneck at rate=1200, profile=short: WAN bandwidth (" in text, text
        assert "bottleneck at rate=300, profile=short: WAN" not in text, text
        assert processes_under(out) == []
        assert footprint(conn) == before, "the sweep left topics or groups behind"
        up.send_signal(signal.SIGINT)
        assert up.wait(90) == 130
    finally:
        if up.poll() is None:
            up.kill()
    assert processes_under(workdir) == []
