"""A driver with a standby (``mirrordrill.lease.group``): the standby takes over when the active dies or is
paused past its lease, and the target still holds every source record once.

Real brokers and real replicator processes, both on this machine (so with the lock file's fast
path too): the active is the harness's process, the standby a second process of the same
configuration with a work folder of its own.
"""

from __future__ import annotations

import json
import re
import signal
import sys
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka.admin import NewTopic

from mirrordrill.harness.drill.replicators.pyspark import PySparkReplicator, ReplicatorNode
from mirrordrill.harness.drill.replicators.setup import FlowSpec, ReplicationSetup
from mirrordrill.primitives.process import ManagedProcess
from mirrordrill.replicator.__main__ import LEASE_LOST_EXIT
from mirrordrill.replicator.config.settings import ReplicatorConfig

from .kafka_helpers import unique_topic, values_in, wait_for
from .resume_helpers import SteadyLoad, exactly_once

pytestmark = pytest.mark.integration


class _LeasedReplicator(PySparkReplicator):
    """The harness's replicator, its configuration naming a lease and a lock file."""

    lease_group = f"it-lease-{uuid.uuid4().hex[:8]}"

    def node_config(self, node: ReplicatorNode, resolve_addresses: bool = True) -> ReplicatorConfig:
        config = super().node_config(node, resolve_addresses)
        return config.model_copy(update={"lease_group": self.lease_group,
                                         "lease_lock_file": str(node.workdir / "lease.lock")})


def _second_driver(repl: _LeasedReplicator, slot: str) -> ManagedProcess:
    """Another driver of the node: the same configuration, a work folder of its own."""
    node = repl.nodes[0]
    workdir = node.workdir / f"work-{slot}"
    workdir.mkdir(parents=True, exist_ok=True)
    proc = ManagedProcess(name=f"driver {slot}", log_path=node.workdir / f"replicator-{slot}.log", cwd=node.workdir,
                          argv=[sys.executable, "-m", "mirrordrill.replicator", "--config", str(node.config_path),
                                "--workdir", str(workdir)], env=repl._env(node))
    proc.start()
    return proc


def _role(workdir: Path) -> str | None:
    try:
        return json.loads((workdir / "metrics.json").read_text()).get("role")
    except (OSError, ValueError):
        return None


@pytest.fixture
def leased(wan_env, artifacts):
    setup = ReplicationSetup(env=wan_env, flows=[FlowSpec("east", "west", topics=["pst-.*"], settings={
        "mirrordrill.transactional": "true"})], workdir=wan_env.workdir / f"pyspark-standby-{uuid.uuid4().hex[:6]}")
    with _LeasedReplicator(setup, mode="realtime", artifacts=artifacts) as r:
        yield r


def test_the_standby_takes_over_a_killed_active_and_a_paused_one_and_copies_every_record_once(leased):
    east, west = leased.setup.env.cluster("east"), leased.setup.env.cluster("west")
    topic = unique_topic("pst-load")
    east.create_topics([NewTopic(topic, 2, 1)])
    remote = leased.remote_topic("east", topic)
    node = leased.nodes[0]
    drivers: list[ManagedProcess] = []
    try:
        b = _second_driver(leased, "b")
        drivers.append(b)
        wait_for(lambda: _role(node.workdir / "work-b") == "standby", 180, "driver b standing by, warmed up")
        assert _role(node.workdir / "work") == "active"
        with SteadyLoad(east.bootstrap, topic, "standby", 6000, rate=200) as load:
            wait_for(lambda: len(values_in(west, remote)) >= 400, 120, "records flowing")
            leased.kill()  # kill -9: the lock file is released at once, the lease's session is not
            wait_for(lambda: _role(node.workdir / "work-b") == "active", 60, "driver b taking over")
            n = len(values_in(west, remote))
            wait_for(lambda: len(values_in(west, remote)) > n, 60, "driver b copying")
            a = _second_driver(leased, "a")  # the killed one again, as the standby now
            drivers.append(a)
            wait_for(lambda: _role(node.workdir / "work-a") == "standby", 180, "driver a standing by")
            b.pause()  # past the lease's session: driver a takes over while b still holds the lock
            time.sleep(10)
            wait_for(lambda: _role(node.workdir / "work-a") == "active", 30, "driver a taking over")
            b.resume()  # its buffered writes are refused (fenced), it finds its lease gone and stops
            assert b.wait(60) == LEASE_LOST_EXIT
            # b was fenced, not let back into the group: started again, it stands by while a holds
            # the lease (had b's client joined again on resuming, it would have replaced a's membership
            # and, once b exited, left the group empty for the new b to take)
            b_again = _second_driver(leased, "b2")
            drivers.append(b_again)
            wait_for(lambda: _role(node.workdir / "work-b2") in ("standby", "active"), 180, "driver b up again")
            time.sleep(12)  # four lease sessions
            assert (_role(node.workdir / "work-a"), _role(node.workdir / "work-b2")) == ("active", "standby")
        exactly_once(west, remote, 2, load.values)
    finally:
        for d in drivers:
            d.stop(timeout_s=30, sig=signal.SIGTERM)
    b_log = (node.workdir / "replicator-b.log").read_text()
    assert "took the lease" in b_log and "the node's lock is free" in b_log
    a_log = (node.workdir / "replicator-a.log").read_text()
    assert "its holder's beats stopped" in a_log and re.search(r"lease \S+ lost", a_log) is None
    # each standby ran its query once into the discarding writer before it took over (and, by the exact
    # copy above, wrote nothing with it)
    for log_text in (b_log, a_log):
        assert 0 <= log_text.find("rehearsed its query") < log_text.find("took the lease"), log_text[-3000:]
