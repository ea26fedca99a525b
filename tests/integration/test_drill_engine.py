"""The drill engine on real clusters: a tiny planned failover, and Ctrl-C in the middle of a drill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mirrordrill.harness.drill.engine import Drill
from mirrordrill.harness.drill.validate import parse_scenario
from mirrordrill.primitives.import_root import IMPORT_ROOT
from tests.conftest import processes_under, read_until

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]

TINY_PLANNED_FAILOVER = """\
name: tiny-planned-failover
clusters:
  primary: {brokers: 1}
  dr: {brokers: 1, broker_jit: tiered}
topics:
  - {name: orders, cluster: primary, partitions: 2}
replication:
  replicator: pyspark
  flows:
    - {source: primary, target: dr, topics: [orders]}
load:
  producers:
    - {name: orders, cluster: primary, topics: [orders], rate: 100, record_size: {fixed: 256}}
  consumers:
    - {group: billing, cluster: primary, topics: [orders], failover_strategy: translated}
duration: 20s
drain_timeout: 45s
timeline:
  - {at: 8s, do: planned_failover, from: primary, to: dr, drain_timeout: 45s, when: {lag_at_most: 100000, timeout: 10s}}
expectations:
  lost: 0
  failover.skipped: 0
"""

FLOW_FIELDS = {"source", "target", "topics", "acked", "replicated", "lost", "duplicates", "reordered", "corrupted",
               "unexpected", "latency_ms", "throughput_records_s", "throughput_mb_s"}
FAILOVER_FIELDS = {"group", "strategy", "skipped", "reprocessed", "rto_s", "rpo_records"}
EXPECTATION_FIELDS = {"name", "passed", "actual", "limit"}


@pytest.mark.serial  # times within 0.5 s and 1.5 s of the load's start and the replicator's log
def test_planned_failover_writes_the_summary_contract(artifacts, tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY_PLANNED_FAILOVER)
    scenario = parse_scenario(TINY_PLANNED_FAILOVER, str(path))
    result = Drill(scenario, path, tmp_path / "run", artifacts=artifacts).run()

    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary == result.summary.to_json()
    assert summary["scenario"] == "tiny-planned-failover" and summary["replicator"] == "pyspark"
    assert summary["interrupted"] is False and summary["error"] is None, summary["error"]
    assert summary["environment"]["broker_jit"] == {"primary": "c1", "dr": "tiered"}
    broker_dir = tmp_path / "run" / "env" / "primary" / "broker-1"
    assert (broker_dir / "broker.log").stat().st_size > 0 and not (broker_dir / "data").exists()

    (flow,) = summary["flows"]
    assert FLOW_FIELDS <= flow.keys()
    assert (flow["source"], flow["target"], flow["topics"]) == ("primary", "dr", ["orders"])
    assert flow["acked"] > 0 and flow["lost"] == 0 and flow["replicated"] >= flow["acked"]
    assert {"p50", "p90", "p99", "max"} <= flow["latency_ms"].keys()
    # the WAN carried every replicated record's bytes toward dr (and some more: headers, protocol);
    # what goes back is requests and acknowledgements, far less
    (wan,) = summary["wan_bytes"].values()
    assert wan["primary->dr"] >= flow["replicated_bytes"] > 0 and wan["dr->primary"] < wan["primary->dr"]

    (group,) = summary["failovers"]
    assert FAILOVER_FIELDS <= group.keys()
    assert (group["group"], group["strategy"]) == ("billing", "translated")
    assert group["skipped"] == 0 and group["rpo_records"] == 0
    assert group["rto_s"] is not None and group["rto_s"] > 0

    assert summary["expectations"] and all(EXPECTATION_FIELDS <= e.keys() for e in summary["expectations"])
    assert summary["passed"] is True, [e for e in summary["expectations"] if not e["passed"]]
    # the failover's parts are in the timeline, in order; dr's producers were launched (held)
    # before the move began, so the RTO counts the move, not a load process's start-up
    names = [e["name"] for e in summary["timeline"]]
    assert names.index("launch producers on dr") < names.index("stop producers on primary") \
        < names.index("drain primary->dr") < names.index("move consumers to dr") < names.index("start producers on dr")
    assert processes_under(tmp_path) == []
    _the_run_folder_explains_itself(tmp_path / "run", path, summary)


def _the_run_folder_explains_itself(run: Path, drill_file: Path, summary: dict) -> None:
    """Issue 16: the drill's log, the step's condition, how the run was made, CSV headers."""
    import hashlib

    from mirrordrill.loadgen.histories.kinds import KINDS
    log = (run / "drill.log").read_text()
    assert summary["logs"]["drill"] == str(run / "drill.log") and "planned_failover" in log and "summary:" in log
    (step,) = [e for e in summary["timeline"] if e["kind"] == "planned_failover"]
    assert step["condition"].startswith("lag <= 100000") and step["condition_held"] is True
    assert summary["load_started_ms"] <= step["condition_checked_ts_ms"] <= step["start_ts_ms"]
    assert summary["started_ms"] <= summary["load_started_ms"]
    # issue 14: t = 0 is when the load began producing (its process start-up excluded), and
    # `at: 8s` counts from there
    stats = [json.loads(f.read_text()) for f in (run / "histories").glob("load-stats.*.json")]
    first_producing = min(s["started_ts_ms"] for s in stats)
    assert abs(first_producing - summary["load_started_ms"]) <= 500, (first_producing, summary["load_started_ms"])
    assert step["start_ts_ms"] - summary["load_started_ms"] >= 8000
    assert summary["replicator_mode"] == "microbatch"
    assert {"mirrordrill", "kafka", "spark", "replicator"} <= summary["versions"].keys()
    assert summary["drill_sha256"] == hashlib.sha256(drill_file.read_bytes()).hexdigest()
    assert summary["rerun"].startswith(f"mirrordrill run {run / 'scenario.yaml'} --replicator pyspark")
    files = sorted((run / "histories").glob("*.csv"))
    assert any(f.name.startswith("end_offsets.") for f in files) and not any(f.name.startswith("lag.") for f in files)
    for f in files:
        assert f.read_text().split("\n", 1)[0] == KINDS[f.name.split(".")[0]].header.rstrip("\n"), f


REAL_TIME_BACKLOG = """\
name: real-time-backlog
clusters:
  primary: {brokers: 1}
  dr: {brokers: 1}
topics:
  - {name: orders, cluster: primary, partitions: 2}
replication:
  replicator: pyspark
  mode: realtime
  flows:
    - {source: primary, target: dr, topics: [orders]}
load:
  backlog:
    - {cluster: primary, topic: orders, records: 2000, record_size: 256}
  producers:
    - {name: orders, cluster: primary, topics: [orders], rate: 20, record_size: {fixed: 256}}
duration: 5s
expectations:
  lost: 0
  duplicates: 0
"""


@pytest.mark.serial  # times within 0.5 s and 1.5 s of the load's start and the replicator's log
def test_a_record_copied_before_the_replicator_is_ready_is_dated_when_it_was_copied(artifacts, tmp_path):
    """A real-time query copies a backlog beside its warm-up, seconds before it counts as ready.

    The observers read the target from before the replicator starts, so the backlog's first
    sighting is when the replicator wrote it (its own first-record time), not when the load was
    released (they used to start then: 2026-11-28, 10.4 s against 14.2 s)."""
    import csv
    path = tmp_path / "backlog.yaml"
    path.write_text(REAL_TIME_BACKLOG)
    summary = Drill(parse_scenario(REAL_TIME_BACKLOG, str(path)), path, tmp_path / "run", artifacts=artifacts
                    ).run().summary.to_json()
    assert summary["passed"] is True, summary["error"] or [e for e in summary["expectations"] if not e["passed"]]
    (start,) = summary["replicator_starts"]
    moved_ms = start["started_at_ms"] + start["first_record_s"] * 1000
    histories = tmp_path / "run" / "histories"
    backlog = {(r["producer_id"], r["seq"]) for r in csv.DictReader((histories / "acked.backlog-primary-orders.csv").open())}
    (observed,) = histories.glob("target.observer-dr*.csv")
    first_seen = min(int(r["seen_ts_ms"]) for r in csv.DictReader(observed.open())
                     if (r["producer_id"], r["seq"]) in backlog)
    # the replicator counted as ready only after its warm-up: the first copies came before
    assert first_seen < summary["load_started_ms"], (first_seen, summary["load_started_ms"])
    # the observer polls every 50 ms and finds a new topic within 1 s; the replicator reads its
    # producers' counts every quarter second
    assert abs(first_seen - moved_ms) <= 1500, (first_seen, moved_ms)
    assert processes_under(tmp_path) == []


LONG_DRILL = """\
name: long-drill
clusters:
  primary: {brokers: 1}
  dr: {brokers: 1}
topics:
  - {name: orders, cluster: primary, partitions: 1}
replication:
  replicator: mirrormaker2
  flows:
    - {source: primary, target: dr, topics: [orders]}
load:
  producers:
    - {name: orders, cluster: primary, topics: [orders], rate: 50, record_size: {fixed: 128}}
duration: 10m
expectations:
  lost: 0
"""


def test_ctrl_c_writes_the_summary_and_stops_everything(tmp_path):
    path = tmp_path / "long.yaml"
    path.write_text(LONG_DRILL)
    out = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=str(IMPORT_ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "mirrordrill.harness.cli.commands", "run", str(path), "--out", str(out),
                             "--keep-broker-data"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path, env=env)
    try:
        lines = read_until(proc, "load running for", 150)
        assert any("load running for" in line for line in lines), "".join(lines)
        time.sleep(5)  # some records acknowledged, some replicated
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=120)
        lines.append(rest)
        assert proc.returncode == 130, "".join(lines)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["passed"] is False
    assert summary["verdict"] == "interrupted"
    assert summary["flows"] and summary["flows"][0]["acked"] > 0
    # interrupted before the drain: what had not arrived yet is in flight, not lost (one
    # partition, copied in order: nothing was skipped)
    flow = summary["flows"][0]
    assert flow["lost"] == 0, flow["samples"]["lost"]
    assert flow["replicated"] + flow["in_flight"] == flow["acked"]
    assert {i["name"]: i["outcome"] for i in summary["invariants"]}["drained"] == "not judged"
    assert processes_under(tmp_path) == []
    assert (out / "env" / "dr" / "broker-1" / "data" / "meta.properties").exists()  # --keep-broker-data
