"""Runbook commands in a real drill: a failover's own runbook runs between the primary's loss and the
applications' move (so its time is in the RTO), with the drill's context; a failing step fails the drill."""

from __future__ import annotations

import json

import pytest

from mirrordrill.harness.drill.engine import Drill
from mirrordrill.harness.drill.validate import load_scenario
from tests.conftest import processes_under

pytestmark = pytest.mark.integration

RUNBOOK_DRILL = """\
name: runbook-drill
clusters:
  primary: {brokers: 1}
  dr: {brokers: 1}
topics:
  - {name: orders, cluster: primary, partitions: 2}
replication:
  replicator: pyspark
  flows:
    - {source: primary, target: dr, topics: [orders]}
load:
  producers:
    - {name: orders, cluster: primary, topics: [orders], rate: 50, record_size: {fixed: 256}}
  consumers:
    - {group: billing, cluster: primary, topics: [orders], failover_strategy: translated}
duration: 20s
drain_timeout: 60s
timeline:
  - at: 8s
    when: {lag_at_most: 100000, timeout: 10s}
    do: planned_failover
    from: primary
    to: dr
    drain_timeout: 45s
    runbook:
      - {name: dns switch, command: [./switch-dns.sh], timeout: 30s}
  - {at: 12s, do: runbook, name: post-check, command: 'echo "checked $MIRRORDRILL_FAILOVER_FLOW"; exit 4'}
expectations:
  lost: 0
  failover.skipped: 0
"""

# What a team's DNS switch would do with the context: here it records it, and takes 3 s.
SWITCH_DNS = """#!/bin/sh
echo "switching to $MIRRORDRILL_FAILOVER_TO at $MIRRORDRILL_TARGET_BOOTSTRAP" > "$MIRRORDRILL_RUN_DIR/dns.txt"
sleep 3
echo done
"""


def test_a_failover_runbook_is_part_of_the_rto_and_a_failing_step_fails_the_drill(artifacts, tmp_path):
    drill = tmp_path / "runbook.yaml"
    drill.write_text(RUNBOOK_DRILL)
    script = tmp_path / "switch-dns.sh"
    script.write_text(SWITCH_DNS)
    script.chmod(0o755)
    run = tmp_path / "run"
    Drill(load_scenario(drill), drill, run, artifacts=artifacts).run()
    summary = json.loads((run / "summary.json").read_text())
    assert summary["error"] is None, summary["error"]

    events = {e["name"]: e for e in summary["timeline"]}
    dns = events["runbook dns switch"]
    assert dns["outcome"] == "ok" and dns["detail"].startswith("exit 0")
    # in the failover, after the drain and before the groups moved
    assert events["drain primary->dr"]["end_ts_ms"] <= dns["start_ts_ms"]
    assert dns["end_ts_ms"] <= events["move consumers to dr"]["start_ts_ms"]
    (group,) = summary["failovers"]
    # RTO runs from the failure to the first record processed on dr, so it holds the runbook's time
    assert group["rto_s"] * 1000 >= dns["end_ts_ms"] - dns["start_ts_ms"] >= 3000
    assert (run / "dns.txt").read_text().startswith("switching to dr at 127.0.0.1:")
    assert (run / "runbook" / "01-dns-switch.log").read_text().rstrip().endswith("done")

    # the failing step: named, with its exit code and output; the drill fails on it alone
    assert events["runbook post-check"]["outcome"] == "failed"
    assert (run / "runbook" / "02-post-check.log").read_text().rstrip().endswith("checked primary->dr")
    failed = [e for e in summary["expectations"] if not e["passed"]]
    assert [e["name"] for e in failed] == ["every timeline step succeeded"], failed
    (failure,) = failed[0]["failures"]
    assert failure.startswith("post-check: runbook 'post-check' failed: exit 4") and "02-post-check.log" in failure
    assert summary["passed"] is False
    assert processes_under(tmp_path) == []
