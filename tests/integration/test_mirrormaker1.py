"""MirrorMaker 1 (Kafka 3.9's ``kafka.tools.MirrorMaker``) as a replicator, against real clusters.

Placed at the target like MM2: it consumes east through the WAN proxy and produces into west.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import NewTopic

from mirrordrill.harness.drill.engine import Drill
from mirrordrill.harness.drill.replicators import FlowSpec, ReplicationSetup, make_replicator
from mirrordrill.harness.drill.replicators.mirrormaker1 import MirrorMaker1Replicator, group_name
from mirrordrill.harness.drill.validate import parse_scenario
from tests.conftest import processes_under
from tests.integration.kafka_helpers import produce_values, read_values, unique_topic, wait_for

pytestmark = pytest.mark.integration

PARTITIONS = 3
DRILL = Path(__file__).parent / "fixtures" / "mirrormaker1-drill.yaml"


@pytest.fixture(scope="module")
def topic(wan_env) -> str:
    name = unique_topic("mm1t")
    wan_env.cluster("east").create_topics([NewTopic(name, PARTITIONS, 1)])
    return name


@pytest.fixture(scope="module")
def mm1(wan_env, topic, tmp_path_factory):
    wan_env.link("east", "west").heal()
    # a crashed member holds its partitions until its session times out (45 s by default): 10 s here
    flow = FlowSpec("east", "west", topics=["mm1t-.*"],
                    settings={"consumer.session.timeout.ms": 10000, "consumer.heartbeat.interval.ms": 3000})
    setup = ReplicationSetup(wan_env, [flow], policy="identity", workdir=tmp_path_factory.mktemp("mirrormaker1"))
    replicator = make_replicator("mirrormaker1", setup, streams=2)
    replicator.start()
    try:
        yield replicator
    finally:
        replicator.stop()


def copies(wan_env, topic: str) -> list[bytes]:
    west = wan_env.cluster("west")
    return read_values(west.bootstrap, topic, PARTITIONS, timeout_s=10)


def test_records_are_copied_under_the_same_name_into_a_topic_made_for_them(mm1: MirrorMaker1Replicator, wan_env,
                                                                           topic):
    values = [f"a-{i}".encode() for i in range(300)]
    assert produce_values(wan_env.cluster("east").bootstrap, topic, values) == [None] * len(values)
    # MirrorMaker 1 only produces; the adapter made the copy with the source's partitions
    meta = wan_env.cluster("west").admin().list_topics(topic, timeout=10).topics[topic]
    assert len(meta.partitions) == PARTITIONS
    got = wait_for(lambda: c if len(c := copies(wan_env, topic)) >= len(values) else None, 60,
                   "300 records on west")
    assert sorted(got) == sorted(values)


def test_it_runs_as_the_flows_consumer_group_with_its_streams_through_the_wan(mm1: MirrorMaker1Replicator, wan_env):
    node = mm1.nodes[0]
    east = wan_env.cluster("east")
    consumer = node.config_path.read_text()
    assert f"group.id = {group_name('east', 'west')}" in consumer
    # placed at the target: the source through its WAN proxy, the target locally
    assert f"bootstrap.servers = {east.wan_bootstrap('west')}" in consumer.replace("\\:", ":")
    assert "session.timeout.ms = 10000" in consumer  # a flow's consumer.* settings reach its consumer
    argv = node.process.argv
    assert argv[argv.index("--num.streams") + 1] == "2"
    assert "kafka.tools.MirrorMaker" in argv


def test_a_killed_mirrormaker_copies_from_its_groups_last_commit_when_it_starts_again(
        mm1: MirrorMaker1Replicator, wan_env, topic):
    before = len(copies(wan_env, topic))
    mm1.kill()
    written_while_down = [f"b-{i}".encode() for i in range(200)]
    assert produce_values(wan_env.cluster("east").bootstrap, topic, written_while_down) == [None] * 200
    time.sleep(1)
    assert len(copies(wan_env, topic)) == before  # nothing moves while it is down
    mm1.start()
    got = wait_for(lambda: c if set(written_while_down) <= set(c := copies(wan_env, topic)) else None, 90,
                   "the records written while MirrorMaker 1 was down, on west")
    assert set(written_while_down) <= set(got)


def test_a_drill_of_mirrormaker1_is_checked_like_any_replicator_s(tmp_path):
    # keys hashed as Java's producers hash them: MirrorMaker 1's producer puts each record back
    # into its source partition's number, which the drill holds it to (misplaced: 0); one of its
    # two nodes is killed mid-load

    text = DRILL.read_text()
    result = Drill(parse_scenario(text, str(DRILL)), DRILL, tmp_path / "run").run()
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["error"] is None, summary["error"]
    (flow,) = summary["flows"]
    assert flow["acked"] > 2000 and flow["replicated"] == flow["acked"] and flow["misplaced"] == 0
    # the node copying orders-0 was killed; the other node took its partitions over
    (fault,) = summary["node_faults"]
    assert fault["step"] == "kill_replicator_node" and fault["node_name"].startswith("mirrormaker1 primary-to-dr node")
    assert summary["versions"]["replicator"] == "MirrorMaker 1 (Kafka 3.9.1)"
    assert result.passed, [e for e in summary["expectations"] if not e["passed"]]
    assert processes_under(tmp_path) == []
