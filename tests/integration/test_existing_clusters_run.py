"""A drill against clusters it did not start, as a team runs one against its staging clusters.

`mirrordrill up` starts two SASL_SSL (SCRAM-SHA-512) clusters and writes a connection file; two
drills built from that file alone treat them as existing clusters: `plan` checks them, and `run`
drives a planned failover (after a blackhole that must really cut replication) and an unplanned
one (the primary cut off by partition, with a runbook step) followed by a failback that rebuilds
only the drill's own topics on the old primary, all over SASL_SSL through the harness's Kafka proxy;
a leftover of an interrupted run refuses the run until `cleanup` removes it; MirrorMaker 2 runs
the planned drill too. Afterwards each cluster holds exactly the topics and groups it held before.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from confluent_kafka.admin import AdminClient, NewTopic

from mirrordrill.primitives.config_refs import RefResolver
from mirrordrill.primitives.import_root import IMPORT_ROOT
from mirrordrill.primitives.kafka.security import ClientSecurity
from tests.conftest import processes_under, up_secure_clusters

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PASSWORD = "existing-clusters-test-pw"
PREFIX = "md-x-"
PRIMARY, DR = f"{PREFIX}primary", f"{PREFIX}dr"

COMMON = """\
owned_prefix: {prefix}
clusters:
  {primary}: {{existing: {primary_def}}}
  {dr}: {{existing: {dr_def}}}
links:
  - {{between: [{primary}, {dr}], latency_ms: 20, jitter_ms: 2}}
topics:
  - {{name: {prefix}orders, cluster: {primary}, partitions: 3, replication_factor: 1}}
replication:
  replicator: pyspark
  mode: realtime
  flows: [{{source: {primary}, target: {dr}, topics: [{prefix}orders]}}]
load:
  producers:
    - {{name: orders, cluster: {primary}, topics: [{prefix}orders], rate: 100, record_size: {{fixed: 512}}, keys: {{uniform: 100}}}}
  consumers:
    - {{group: {prefix}billing, cluster: {primary}, topics: [{prefix}orders], failover_strategy: translated}}
drain_timeout: 60s
"""

PLANNED = """\
name: existing-planned-failover
duration: 36s
timeline:
  # replication keeps up from the load's first second; healed, it catches up within a few seconds
  - {{at: 4s, do: blackhole, link: [{primary}, {dr}]}}
  - {{at: 14s, do: heal, link: [{primary}, {dr}]}}
  - at: 20s
    when: {{lag_at_most: 300, timeout: 30s}}
    do: planned_failover
    from: {primary}
    to: {dr}
invariants: {{duplicates: 0}}
expectations:
  lost: 0
  corrupted: 0
  reordered: 0
  # the 10 s blackhole must really have held replication: records produced at its start waited
  latency_ms.max: ">= 8000"
  failover.skipped: 0
  # a planned move waits for checkpoints carrying the commit: MM2 replays nothing either
  failover.reprocessed: 0
  failover.rpo_records: 0
"""

UNPLANNED = """\
name: existing-unplanned-failover
duration: 40s
timeline:
  - at: 10s
    when: {{lag_at_most: 300, timeout: 30s}}
    do: unplanned_failover
    from: {primary}
    to: {dr}
    how: partition
    runbook:
      - name: announce dr
        command: 'echo "switch to $MIRRORDRILL_FAILOVER_TO at $MIRRORDRILL_TARGET_BOOTSTRAP"; sleep 1'
        timeout: 30s
  # the old primary's "wipe" deletes only the drill's names there; dr is copied back, then switch back
  - {{at: 20s, do: failback, from: {dr}, to: {primary}, switch_back: true, timeout: 150s}}
invariants: {{rpo_records: 1000, duplicates: 0}}
expectations:
  corrupted: 0
  lost: "<= 1000"
  failover.skipped: 0
  failover.rto_s: "<= 60"
  failback.missing: 0
  failback.extra: 0
"""


def drill_text(template: str, conn: dict) -> str:
    def flow_style(entry: dict) -> str:
        d = {"bootstrap_servers": entry["bootstrap_servers"], "security": entry["security"]}
        return json.dumps(d)  # JSON is YAML flow style
    fields = dict(prefix=PREFIX, primary=PRIMARY, dr=DR, primary_def=flow_style(conn["clusters"]["primary"]),
                  dr_def=flow_style(conn["clusters"]["dr"]))
    return template.format(**fields) + COMMON.format(**fields)


def admin_of(entry: dict) -> AdminClient:
    conf = ClientSecurity(**entry["security"]).resolve(RefResolver({})).librdkafka()
    return AdminClient({"bootstrap.servers": entry["bootstrap_servers"], "log_level": 0, **conf})


def plant_leftover(entry: dict, topic: str) -> None:
    admin = admin_of(entry)  # held until the creation is confirmed
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)


def footprint(conn: dict) -> dict[str, tuple[list[str], list[str]]]:
    """Every topic and consumer group of each cluster, read with the connection file's settings."""
    out = {}
    for name, entry in conn["clusters"].items():
        admin = admin_of(entry)
        topics = sorted(admin.list_topics(timeout=30).topics)
        groups = sorted(g.group_id for g in admin.list_consumer_groups(request_timeout=30).result().valid)
        out[name] = (topics, groups)
    return out


def run_cli(*args: str, cwd: Path, env: dict, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mirrordrill.harness.cli.commands", *args], cwd=cwd, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)


def test_drills_on_existing_secure_clusters_pass_through_the_proxy_and_leave_nothing(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(IMPORT_ROOT), MIRRORDRILL_SECURE_PASSWORD=PASSWORD)
    up, workdir, conn_path, _ = up_secure_clusters(tmp_path, PASSWORD)
    try:
        conn = yaml.safe_load(conn_path.read_text())
        before = footprint(conn)
        allow = ["--allow-cluster", PRIMARY, "--allow-cluster", DR]
        # MirrorMaker 2 too, once: its heartbeat connector asks to create 'heartbeats' even with emission off;
        # the proxy refuses it (the name is not the drill's), so the footprint below shows nothing was made
        for template, replicator in ((PLANNED, "pyspark"), (UNPLANNED, "pyspark"), (PLANNED, "mirrormaker2")):
            drill = tmp_path / f"{template.split()[1]}.yaml"
            drill.write_text(drill_text(template, conn))
            planned = run_cli("plan", str(drill), "--replicator", replicator, cwd=tmp_path, env=env)
            assert planned.returncode == 0, planned.stdout
            out = tmp_path / f"run-{drill.stem}-{replicator}"
            run = ["run", str(drill), "--out", str(out), "--replicator", replicator]
            # the allow-list is required: without it nothing starts
            refused = run_cli(*run, cwd=tmp_path, env=env)
            assert refused.returncode == 2 and "--allow-cluster" in refused.stdout, refused.stdout
            if template is UNPLANNED:  # an interrupted run's leftover: refused until cleanup removes it
                plant_leftover(conn["clusters"]["primary"], f"{PREFIX}stale")
                refused = run_cli(*run, *allow, cwd=tmp_path, env=env)
                assert refused.returncode == 2 and f"mirrordrill cleanup {drill} --dry-run" in refused.stdout \
                    and "an earlier run's, or someone else's" in refused.stdout, refused.stdout
                cleaned = run_cli("cleanup", str(drill), "--yes", cwd=tmp_path, env=env)
                assert cleaned.returncode == 0 and f"'{PREFIX}stale'" in cleaned.stdout, cleaned.stdout
            ran = run_cli(*run, *allow, cwd=tmp_path, env=env)
            summary = json.loads((out / "summary.json").read_text())
            failed = [e for e in summary["expectations"] if not e["passed"]]
            assert ran.returncode == 0 and summary["passed"], (ran.stdout[-4000:], failed, summary.get("error"))
            assert PASSWORD not in ran.stdout
            # the proxy sat in every path: its log is the "broker" log of each existing cluster
            assert sorted(summary["logs"]["brokers"].values()) == sorted(
                str(out / "env" / c / f"kafka-proxy-{c}.log") for c in (DR, PRIMARY)), summary["logs"]["brokers"]
            assert processes_under(out) == []
            assert footprint(conn) == before, "the drill left topics or groups behind"
        up.send_signal(signal.SIGINT)
        assert up.wait(90) == 130
    finally:
        if up.poll() is None:
            up.kill()
    assert processes_under(workdir) == []
