"""A first active/active start: every backlog record is copied once each way, although both
sides' ``heartbeats`` topics appear (and are picked up as new topics) while records flow.

Fresh clusters on purpose: the shared ones already hold ``heartbeats``, and the replay this
guards against happened only when that topic appeared for the first time.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import NewTopic

from harness.environment import Environment, TopologySpec
from harness.kafka.cluster import ClusterSpec
from harness.replicators.pyspark import PySparkReplicator
from harness.replicators.setup import DRILL_FLOW_INTERVALS, FlowSpec, ReplicationSetup

from .kafka_helpers import wait_for
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
                wait_for(lambda: f"{other}.heartbeats" in cluster.admin().list_topics(timeout=15).topics, 120,
                         f"{other}.heartbeats copied to {cluster.name}")
            time.sleep(REFRESH_S + 5)
            exactly_once(south, "north.orders", 3, backlog["north"])
            exactly_once(north, "south.orders", 3, backlog["south"])
