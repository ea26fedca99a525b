"""Every process an environment starts is stopped on every exit path."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mirrordrill.harness.lab.brokers.cluster import ClusterNotReady, ClusterSpec
from mirrordrill.harness.lab.environment import Environment, TopologySpec
from mirrordrill.primitives.import_root import IMPORT_ROOT
from tests.conftest import processes_under, read_until

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def _spec(**broker_properties) -> TopologySpec:
    return TopologySpec(clusters=(ClusterSpec("a", broker_properties=broker_properties), ClusterSpec("b")))


def test_exception_inside_the_block_stops_everything(artifacts, tmp_path):
    with pytest.raises(RuntimeError, match="drill failed"):
        with Environment(_spec(), tmp_path / "env", artifacts):
            assert len(processes_under(tmp_path)) == 3  # toxiproxy + two brokers
            raise RuntimeError("drill failed")
    assert processes_under(tmp_path) == []


def test_failure_during_start_up_stops_what_had_started(artifacts, tmp_path):
    # A missing authorizer class passes storage formatting but makes broker a/1 exit at start,
    # while b/1 and toxiproxy are already running.
    env = Environment(_spec(**{"authorizer.class.name": "com.example.NoSuchAuthorizer"}), tmp_path / "env", artifacts)
    with pytest.raises(ClusterNotReady) as err:
        with env:
            pass
    assert "broker" in str(err.value) and "broker.log" in str(err.value)
    assert processes_under(tmp_path) == []


def test_a_stopped_environment_keeps_its_broker_logs_but_not_their_segments(artifacts, tmp_path):
    # a capacity sweep's point left 1.2 GB of segments behind, and a sweep of 18 points filled the disk
    with Environment(TopologySpec(clusters=(ClusterSpec("a"),)), tmp_path / "env", artifacts) as env:
        broker = env.cluster("a").brokers[0]
        assert (broker.data_dir / "meta.properties").exists()
    assert not broker.data_dir.exists()
    assert broker.log_path.stat().st_size > 0 and broker.config_path.exists()


def test_ctrl_c_on_the_cli_stops_everything(tmp_path):
    workdir = tmp_path / "up"
    env = dict(os.environ, PYTHONPATH=str(IMPORT_ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "mirrordrill.harness.cli.commands", "up", "--clusters", "x,y",
                             "--workdir", str(workdir)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, cwd=tmp_path, env=env)
    try:
        lines = read_until(proc, "Ctrl-C stops everything", 180)
        assert any("ready in" in line for line in lines), "".join(lines)
        assert (workdir / "manifest.json").exists()
        assert len(processes_under(workdir)) == 3
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
    assert processes_under(workdir) == []
    # 'up' is the user's own lab, in the folder they named: its data stays there
    assert (workdir / "x" / "broker-1" / "data" / "meta.properties").exists()
