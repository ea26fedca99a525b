"""A first active/active start: every backlog record is copied once each way, although both
sides' ``heartbeats`` topics appear (and are picked up as new topics) while records flow.

Fresh clusters on purpose: the shared ones already hold ``heartbeats``, and the replay this
guards against happened only when that topic appeared for the first time.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import NewTopic

from mirrordrill.harness.drill.replicators.pyspark import PySparkReplicator
from mirrordrill.harness.drill.replicators.setup import DRILL_FLOW_INTERVALS, FlowSpec, ReplicationSetup
from mirrordrill.harness.lab.brokers.cluster import ClusterSpec
from mirrordrill.harness.lab.environment import Environment, TopologySpec

from .kafka_helpers import unique_topic, wait_for
from .resume_helpers import exactly_once, produce

pytestmark = pytest.mark.integration

REFRESH_S = float(DRILL_FLOW_INTERVALS["refresh.topics.interval.seconds"])


def test_first_active_active_start_copies_each_backlog_record_once_each_way(artifacts, tmp_path, lab_backend):
    spec = TopologySpec(clusters=(ClusterSpec("north"), ClusterSpec("south")))
    with Environment(spec, tmp_path / "env", artifacts, backend=lab_backend.make("first-start")) as env:
        north, south = env.cluster("north"), env.cluster("south")
        backlog = {}
        for cluster in (north, south):
            assert "heartbeats" not in cluster.admin().list_topics(timeout=15).topics
            cluster.create_topics([NewTopic("orders", 3, 1)])
            backlog[cluster.name] = [f"{cluster.name}-{i}".encode() for i in range(100)]
            produce(cluster.bootstrap, "orders", backlog[cluster.name])
        flows = [FlowSpec("north", "south", topics=["orders"]), FlowSpec("south", "north", topics=["orders"])]
        setup = ReplicationSetup(env=env, flows=flows, workdir=tmp_path / "replicator")
        with PySparkReplicator(setup, mode="realtime", artifacts=artifacts):
            # each side's heartbeats topic is new to the other side's flow: wait until both were
            # picked up and copied, then a refresh and 5 s more, for any replay to land
            for cluster, other in ((north, "south"), (south, "north")):
                wait_for(lambda other=other, cluster=cluster:
                         f"{other}.heartbeats" in cluster.admin().list_topics(timeout=15).topics,
                         120, f"{other}.heartbeats copied to {cluster.name}")
            time.sleep(REFRESH_S + 5)
            exactly_once(south, "north.orders", 3, backlog["north"])
            exactly_once(north, "south.orders", 3, backlog["south"])


# serial: in the parallel part it failed twice (its first trial, and a CI run: the query started
# from the positions read ahead, then no record of 50 reached the target in 180 s; the CI run is in
# the suite-runs record under docs/measurements/); alone it has never failed. Not yet explained: a
# failure now shows the replicator's last log lines (tests/conftest.py).
@pytest.mark.serial
def test_topics_that_appear_while_the_jvm_starts_are_synced_and_positioned_before_the_session(
        wan_env, artifacts, tmp_path):
    """In a chain the next hop's topics appear on its source a second into its start, made by the
    process upstream, one after another (its remote topic, then its heartbeats). They are created
    on the target and their resume positions read beside the JVM's start, so the first query
    starts from them instead of reading them after the session (the chain's relay->core flow did:
    its first query 2.5-3.3 s after the session, 2026-11-28).

    The driver JVM is held at its start until both topics were synced: on a quiet machine its
    session was ready 2.1 s after "starting Spark", before the test had made the second topic (CI,
    2026-11-29), and how slowly a JVM starts is not what this test is about."""
    east, west = wan_env.cluster("east"), wan_env.cluster("west")
    first, second = unique_topic("appears"), unique_topic("appears-later")
    setup = ReplicationSetup(env=wan_env, flows=[FlowSpec("east", "west", topics=["appears-.*"])],
                             workdir=tmp_path / "replicator")
    repl = PySparkReplicator(setup, mode="realtime", artifacts=artifacts)
    (node,) = repl.nodes
    jvm_may_start = tmp_path / "jvm-may-start"
    node.process.env["JAVA_HOME"] = str(held_java_home(tmp_path / "held-jdk", Path(artifacts.java), jvm_may_start))

    def log_has(text: str) -> bool:
        return node.log_path.exists() and text in node.log_path.read_text()

    def synced(topic: str) -> bool:  # named only by "creating remote topics [...]"
        return log_has(f"'{repl.remote_topic('east', topic)}'")

    started = threading.Thread(target=repl.start, name="replicator start")
    started.start()
    try:
        # logged after the first topic sync (which found nothing) and before the session exists
        wait_for(lambda: log_has("starting Spark ("), 120, "the replicator's first topic sync", interval_s=0.1)
        east.create_topics([NewTopic(first, 2, 1)])
        wait_for(lambda: synced(first), 30, f"{first} synced", interval_s=0.1)
        east.create_topics([NewTopic(second, 1, 1)])  # found by a later look than the first one
        wait_for(lambda: synced(second), 30, f"{second} synced", interval_s=0.1)
        values = [f"appeared-{i}".encode() for i in range(50)]
        produce(east.bootstrap, first, values)
        produce(east.bootstrap, second, values)
        # positions are read in the look that synced a topic, or again every 0.5 s while its new
        # remote topic has no leader; the JVM is still held, so only this look can have read them
        def both_read_ahead() -> bool:
            return node.log_path.exists() and any(
                "resume positions read ahead for" in line and f"'{first}'" in line and f"'{second}'" in line
                for line in node.log_path.read_text().splitlines())
        wait_for(both_read_ahead, 30, "the positions of both topics read ahead", interval_s=0.1)
        assert not log_has("Spark session ready")
        jvm_may_start.touch()
        started.join()
        assert repl.running
        (start,) = repl.start_times()
        assert start["positions_s"] is not None and start["positions_s"] <= start["spark_session_s"], start
        first_query = next(line for line in node.log_path.read_text().splitlines() if "east->west: replicating" in line)
        assert first in first_query and second in first_query and "(positions read ahead)" in first_query, first_query
        exactly_once(west, repl.remote_topic("east", first), 2, values)
        exactly_once(west, repl.remote_topic("east", second), 1, values)
    finally:
        jvm_may_start.touch()
        started.join()
        repl.stop()


def held_java_home(home: Path, java: Path, gate: Path) -> Path:
    """A JAVA_HOME whose ``bin/java`` waits until ``gate`` exists, then runs ``java``: Spark's
    launch scripts run ``$JAVA_HOME/bin/java``, so the driver JVM starts when the test says."""
    (home / "bin").mkdir(parents=True)
    script = home / "bin" / "java"
    script.write_text(f'#!/bin/sh\nwhile [ ! -e "{gate}" ]; do sleep 0.05; done\nexec "{java.resolve()}" "$@"\n')
    script.chmod(0o755)
    return home
