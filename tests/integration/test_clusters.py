"""Real Kafka clusters: start, accept writes, and survive the lifecycle faults drills inject."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import KafkaException

from mirrordrill.harness.lab.brokers.class_archive import broker_archive
from mirrordrill.harness.lab.brokers.cluster import ClusterSpec, round_trip
from mirrordrill.harness.lab.environment import Environment, TopologySpec

from .kafka_helpers import new_topic, produce_values, read_values, unique_topic

pytestmark = pytest.mark.integration


def test_two_clusters_accept_writes_locally_and_across_the_wan(wan_env):
    for name, remote in (("east", "west"), ("west", "east")):
        cluster = wan_env.cluster(name)
        topic = unique_topic(f"writes-{name}")
        cluster.create_topics([new_topic(topic, partitions=3)])
        local = [f"{name}-local-{i}".encode() for i in range(50)]
        remote_values = [f"{name}-from-{remote}-{i}".encode() for i in range(50)]
        assert produce_values(cluster.bootstrap, topic, local) == [None] * 50
        assert produce_values(cluster.wan_bootstrap(remote), topic, remote_values) == [None] * 50
        assert sorted(read_values(cluster.bootstrap, topic, partitions=3)) == sorted(local + remote_values)


def test_clusters_are_separate_data_centers(wan_env):
    topic = unique_topic("only-east")
    wan_env.cluster("east").create_topics([new_topic(topic)])
    assert produce_values(wan_env.cluster("east").bootstrap, topic, [b"x"]) == [None]
    west_topics = wan_env.cluster("west").admin().list_topics(timeout=10).topics
    assert topic not in west_topics


def test_unknown_cluster_error_names_the_valid_ones(wan_env):
    with pytest.raises(KeyError, match=r"unknown cluster 'north'; clusters are \['east', 'west'\]"):
        wan_env.cluster("north")


@pytest.fixture(scope="module")
def three_broker_env(artifacts, session_workdir, lab_backend):
    """One data center of three brokers (a three-voter KRaft quorum) for lifecycle faults."""
    spec = TopologySpec(clusters=(ClusterSpec("dc", brokers=3, heap_mb=384),))
    with Environment(spec, session_workdir / "three-brokers", artifacts,
                     backend=lab_backend.make("three-brokers")) as env:
        yield env


def test_killed_broker_restarts_with_its_data(three_broker_env):
    cluster = three_broker_env.cluster("dc")
    topic = unique_topic("kill9")
    cluster.create_topics([new_topic(topic, partitions=3, rf=3)])
    before = [f"before-{i}".encode() for i in range(200)]
    assert produce_values(cluster.bootstrap, topic, before) == [None] * 200

    victim = cluster.broker(2)
    victim.kill()
    assert not victim.running
    # two of three replicas left: min.insync.replicas=2 still accepts acks=all writes
    during = [f"during-{i}".encode() for i in range(100)]
    assert produce_values(cluster.bootstrap, topic, during) == [None] * 100

    victim.start()
    cluster.wait_ready(120)
    segment_files = list((victim.data_dir).glob(f"{topic}-*/*.log"))
    assert segment_files, "the restarted broker lost its log directory"
    assert sorted(read_values(cluster.bootstrap, topic, partitions=3)) == sorted(before + during)


def test_the_leader_of_a_partition_is_found_and_a_new_one_elected_when_it_dies(three_broker_env):
    from mirrordrill.primitives.kafka.topics import partition_leader
    cluster = three_broker_env.cluster("dc")
    topic = unique_topic("leader")
    cluster.create_topics([new_topic(topic, partitions=3, rf=3)])
    leaders = {p: partition_leader(cluster.bootstrap, topic, p) for p in range(3)}
    assert set(leaders.values()) <= {1, 2, 3}
    # as the brokers report it themselves
    reported = cluster.admin().list_topics(topic, timeout=10).topics[topic].partitions
    assert leaders == {p: reported[p].leader for p in range(3)}
    victim = cluster.broker(leaders[0])
    victim.kill()
    try:
        # the controller notices the crash when the broker's heartbeats stop: until then it is still named
        deadline = time.monotonic() + 60
        while (after := partition_leader(cluster.bootstrap, topic, 0)) == leaders[0] and time.monotonic() < deadline:
            time.sleep(0.5)
        assert after != leaders[0] and after in {1, 2, 3}
        with pytest.raises(ValueError, match="partitions 0..2, not 7"):
            partition_leader(cluster.bootstrap, topic, 7)
    finally:
        victim.start()
        cluster.wait_ready(120)


def test_whole_cluster_kill_and_restart_keeps_data(three_broker_env):
    cluster = three_broker_env.cluster("dc")
    topic = unique_topic("cluster-kill")
    cluster.create_topics([new_topic(topic, partitions=2, rf=3)])
    values = [f"v{i}".encode() for i in range(100)]
    assert produce_values(cluster.bootstrap, topic, values) == [None] * 100
    cluster.kill()
    assert not any(b.running for b in cluster.brokers)
    cluster.start()
    cluster.wait_ready(180)
    assert sorted(read_values(cluster.bootstrap, topic, partitions=2)) == sorted(values)


def test_paused_broker_resumes(artifacts, session_workdir, lab_backend):
    spec = TopologySpec(clusters=(ClusterSpec("solo"),))
    with Environment(spec, session_workdir / "pause", artifacts, backend=lab_backend.make("pause")) as env:
        cluster = env.cluster("solo")
        broker = cluster.brokers[0]
        broker.pause()
        assert broker.running and broker.process.paused
        with pytest.raises((KafkaException, TimeoutError)):
            round_trip(cluster, timeout_s=3)  # a frozen broker answers nothing
        broker.resume()
        round_trip(cluster, timeout_s=30)
        topic = unique_topic("after-pause")
        cluster.create_topics([new_topic(topic)])
        assert produce_values(cluster.bootstrap, topic, [b"alive"]) == [None]


def test_wiped_cluster_comes_back_empty(artifacts, session_workdir, lab_backend):
    spec = TopologySpec(clusters=(ClusterSpec("wipe"),))
    with Environment(spec, session_workdir / "wipe", artifacts, backend=lab_backend.make("wipe")) as env:
        cluster = env.cluster("wipe")
        topic = unique_topic("doomed")
        cluster.create_topics([new_topic(topic)])
        cluster.wipe()
        cluster.start()
        cluster.wait_ready(120)
        assert topic not in cluster.admin().list_topics(timeout=10).topics


def test_local_brokers_map_the_class_data_archive_made_for_their_jdk_and_jars(artifacts, session_workdir):
    archive = broker_archive(artifacts.java, artifacts.broker_classpath, print).path
    spec = TopologySpec(clusters=(ClusterSpec("mapped"),))
    with Environment(spec, session_workdir / "class-archive", artifacts) as env:  # local processes
        broker = env.cluster("mapped").brokers[0]
        assert archive.is_file(), "the first broker's start did not leave the archive"
        assert f"-XX:SharedArchiveFile={archive}" in broker.process.argv
        # mapped, not only named: the JVM refuses a mismatched archive silently (-Xshare:auto)
        maps = Path(f"/proc/{broker.process.pid}/maps").read_text()
        assert str(archive) in maps, "the broker JVM did not map the archive"
        round_trip(env.cluster("mapped"), timeout_s=30)


# Reads a group's commits every 20 ms through one long-lived handle (as the replicator's checkpoint
# loop does) until told to stop (a line on stdin), then prints the last answer.
_COMMITS_READER = """
import json, sys, threading
from mirrordrill.primitives.kafka.group_offsets import group_offsets
bootstrap, group = sys.argv[1], sys.argv[2]
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
last = None
with group_offsets({"bootstrap.servers": bootstrap}, group) as handle:
    while not stop.wait(0.02):
        try:
            answer = handle.committed(timeout_s=5)
        except Exception:  # coordinator unknown for a moment: asked again
            continue
        if last is None:
            print("reading", flush=True)
        last = answer
print(json.dumps(sorted(last.items()) if last else None))
"""


def test_a_groups_commits_are_read_while_its_coordinator_dies_and_comes_back(three_broker_env):
    """The admin client aborted or crashed its process in this situation (librdkafka 2.16), killing
    a replicator mid-drill: the commits are read through a consumer of the group instead."""
    from confluent_kafka import ElectionType, TopicPartition

    from mirrordrill.primitives.kafka.group_offsets import group_offsets

    cluster = three_broker_env.cluster("dc")
    topic, group = unique_topic("coord"), unique_topic("group")
    cluster.create_topics([new_topic(topic, partitions=3, rf=3)])
    with group_offsets({"bootstrap.servers": cluster.bootstrap}, group) as handle:
        handle.commit({(topic, p): 10 + p for p in range(3)})
    admin = cluster.admin()
    coordinator = admin.describe_consumer_groups([group])[group].result(timeout=15).coordinator.id
    reader = subprocess.Popen([sys.executable, "-c", _COMMITS_READER, cluster.bootstrap, group],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              cwd=Path(__file__).parents[2])
    try:
        assert reader.stdout.readline() == "reading\n"  # the handle knows the coordinator
        time.sleep(1)
        victim = cluster.broker(coordinator)
        victim.kill()
        time.sleep(8)  # the controller fences it and the group moves to another broker
        victim.start()
        cluster.wait_ready(120)
        # the group moves back to its preferred leader at once, not minutes later
        admin.elect_leaders(ElectionType.PREFERRED,
                            [TopicPartition("__consumer_offsets", p) for p in range(10)]).result(timeout=30)
        time.sleep(3)
        out, _ = reader.communicate("stop\n", timeout=30)
    finally:
        reader.kill()
    assert reader.returncode == 0, f"the reader died: exit status {reader.returncode}"
    assert json.loads(out) == [[[topic, p], 10 + p] for p in range(3)]
