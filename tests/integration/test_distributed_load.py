"""Locust's distributed mode: a load master and its workers against a real cluster, over loopback.

Each worker keeps its own ledger in its own folder and sends it to the master over Locust's channel;
the master's copies in its output folder must be byte for byte the workers' and, together, match
the topic exactly (tests/integration/test_load.py's read-back).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import NewTopic

from mirrordrill.harness.drill.engine import Drill
from mirrordrill.harness.drill.validate import parse_scenario
from mirrordrill.loadgen.histories.kinds import ACKED_SENDS
from mirrordrill.loadgen.histories.reader import read_rows
from mirrordrill.loadgen.runner import LoadRunner
from mirrordrill.loadgen.spec import LoadStats
from mirrordrill.primitives.import_root import IMPORT_ROOT
from tests.conftest import processes_under
from tests.integration.kafka_helpers import unique_topic as unique
from tests.integration.test_load import assert_ledger_matches_topic, load_spec

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def east(wan_env):
    return wan_env.cluster("east")


def master_address(runner: LoadRunner, timeout_s: float = 30.0) -> str:
    """Where the master listens, from its stats file (it picks a free port)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        stats = runner.stats()
        if stats is not None and stats.master_address:
            return stats.master_address
        assert runner.running, runner.log_path.read_text()[-3000:]
        time.sleep(0.1)
    raise AssertionError(f"the master wrote no address within {timeout_s:g}s")


def start_load_worker(master: str, folder: Path) -> subprocess.Popen[bytes]:
    """``mirrordrill load-worker`` in its own working directory, as a team starts it on another machine."""
    folder.mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(IMPORT_ROOT)}
    with open(folder / "worker.log", "wb") as out:
        return subprocess.Popen([sys.executable, "-m", "mirrordrill.harness.cli", "load-worker", "--master", master,
                                 "--dir", "ledger", "--once"], cwd=folder, env=env, stdout=out,
                                stderr=subprocess.STDOUT)


def test_a_master_and_two_load_worker_commands_in_their_own_folders(east, tmp_path):
    t = unique("load-dist")
    east.create_topics([NewTopic(t, 3, 1)])
    spec = load_spec(east.bootstrap, [t], rate=400, duration_s=6, users=4, remote_workers=2,
                     worker_join_timeout_s=30)
    runner = LoadRunner(spec, tmp_path / "master")
    workers: list[subprocess.Popen[bytes]] = []
    try:
        runner.start(wait=False)
        master = master_address(runner)
        workers = [start_load_worker(master, tmp_path / f"machine-{k}") for k in (1, 2)]
        runner.wait_running()
        assert runner.wait(60) == 0, runner.log_path.read_text()[-3000:]
        for w in workers:
            assert w.wait(30) == 0
    finally:
        runner.stop()
        for w in workers:
            w.kill()
            w.wait()
    stats: LoadStats | None = runner.stats()
    assert stats is not None and stats.final and stats.state == "stopped", stats
    assert len(stats.workers) == 2 and all(w.done and w.error is None for w in stats.workers), stats.workers
    assert {w.instance for w in stats.workers} == {f"{runner.instance}w0", f"{runner.instance}w1"}
    assert all(w.acked > 0 for w in stats.workers)
    assert stats.acked == sum(w.acked for w in stats.workers)
    assert 300 <= stats.achieved_rate <= 500, stats
    # the master's copies are the workers' own files, byte for byte, and nothing in the run folder
    # came from a shared filesystem: each worker wrote only under its own folder
    local = sorted((tmp_path / "machine-1" / "ledger").glob("acked.*.csv")) + \
        sorted((tmp_path / "machine-2" / "ledger").glob("acked.*.csv"))
    assert len(local) == 2
    copies = {p.name: p.read_bytes() for p in runner.ledger_paths}
    assert {p.name: p.read_bytes() for p in local} == copies
    acked, _ = assert_ledger_matches_topic(runner, east.bootstrap, {t: 3}, exact=True)
    assert acked == stats.acked
    assert {r.producer_id.rsplit("-u", 1)[0] for r in read_rows(ACKED_SENDS, runner.ledger_paths)} == \
        {f"load-{w.instance}" for w in stats.workers}


def test_a_master_whose_workers_never_join_gives_up_with_one_plain_line(east, tmp_path):
    spec = load_spec(east.bootstrap, [unique("load-alone")], rate=10, duration_s=5, users=1, remote_workers=1,
                     worker_join_timeout_s=2)
    runner = LoadRunner(spec, tmp_path / "master")
    try:
        runner.start(wait=False)
        assert runner.wait(30) == 1
    finally:
        runner.stop()
    stats = runner.stats()
    assert stats is not None and stats.state == "failed"
    assert stats.error == f"only 0 of 1 load worker(s) joined the master on {stats.master_address} within 2s; giving up"


# A Locust worker as ours is between connecting and registering its handlers: Locust counts it as
# ready already, and a spec sent then is dropped ("Unknown message type"), so the run would wait for
# an answer that never comes. The master counts only workers that said hello.
BARE_WORKER = """
import sys, gevent
from locust.env import Environment
host, port = sys.argv[1].rsplit(":", 1)
Environment().create_worker_runner(host, int(port))
gevent.sleep(60)
"""


def test_a_locust_worker_that_has_not_said_hello_is_not_sent_a_spec(east, tmp_path):
    spec = load_spec(east.bootstrap, [unique("load-bare")], rate=10, duration_s=5, users=1, remote_workers=1,
                     worker_join_timeout_s=8)
    runner = LoadRunner(spec, tmp_path / "master")
    bare: subprocess.Popen[bytes] | None = None
    log = tmp_path / "bare-worker.log"
    try:
        runner.start(wait=False)
        with open(log, "wb") as out:
            bare = subprocess.Popen([sys.executable, "-c", BARE_WORKER, master_address(runner)], stdout=out,
                                    stderr=subprocess.STDOUT)
        assert runner.wait(40) == 1
    finally:
        runner.stop()
        if bare is not None:
            bare.kill()
            bare.wait()
    stats = runner.stats()
    assert stats is not None and stats.state == "failed"
    assert stats.error == f"only 0 of 1 load worker(s) joined the master on {stats.master_address} within 8s; giving up"
    assert "reported as ready" in runner.log_path.read_text()  # Locust did count it
    assert "Unknown message type" not in log.read_text()  # and no spec was sent into the void


def test_local_workers_die_with_a_killed_master(east, tmp_path):
    t = unique("load-orphans")
    east.create_topics([NewTopic(t, 1, 1)])
    spec = load_spec(east.bootstrap, [t], rate=50, duration_s=120, users=2, workers=2)
    runner = LoadRunner(spec, tmp_path / "master")
    try:
        runner.start()  # returns once the workers produce
        stats = runner.stats()
        assert stats is not None and stats.state == "running" and len(stats.workers) == 2
        assert len(processes_under(tmp_path)) == 3  # the master and its two workers, each in its own folder
        runner.kill()
        deadline = time.monotonic() + 10
        while processes_under(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert processes_under(tmp_path) == []
    finally:
        runner.stop()


TWO_WORKER_DRILL = """\
name: two-load-workers
clusters:
  primary: {brokers: 1}
  dr: {brokers: 1}
topics:
  - {name: orders, cluster: primary, partitions: 2}
replication:
  replicator: mirrormaker2
  flows:
    - {source: primary, target: dr, topics: [orders]}
load:
  workers: 2
  producers:
    - {name: orders, cluster: primary, topics: [orders], rate: 100, users: 2, record_size: {fixed: 256}}
duration: 12s
drain_timeout: 60s
expectations:
  lost: 0
  duplicates: 0
"""


def test_a_drill_with_two_load_workers_passes_and_lists_both(artifacts, tmp_path):
    path = tmp_path / "two-workers.yaml"
    path.write_text(TWO_WORKER_DRILL)
    result = Drill(parse_scenario(TWO_WORKER_DRILL, str(path)), path, tmp_path / "run", artifacts=artifacts).run()
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary == result.summary.to_json()
    assert summary["passed"] is True and summary["error"] is None, summary["expectations"]
    (flow,) = summary["flows"]
    assert flow["acked"] > 0 and flow["lost"] == flow["unexpected"] == flow["duplicates"] == 0
    assert flow["replicated"] == flow["acked"]
    workers = summary["load_workers"]
    assert [(w["producer"], w["cluster"], w["index"]) for w in workers] == [("orders", "primary", 0),
                                                                            ("orders", "primary", 1)]
    assert all(w["done"] and w["error"] is None and w["acked"] > 0 and w["host"] for w in workers), workers
    assert len({w["instance"] for w in workers}) == 2
    assert sum(w["acked"] for w in workers) == flow["acked"]
    assert processes_under(tmp_path) == []
