"""Real Apache MirrorMaker 2 through the replicator adapter, against real clusters over the WAN.

One active/active MM2 setup (east <-> west, default policy, one MM2 process per data center)
is shared by the whole module: MM2 takes 15-30 s to start on a small machine. Topics of this
module start with ``mm2t-``; the flows select ``.*mm2t-.*`` so that remote topics (``east.mm2t-…``)
match the filter too and only MM2's cycle detection keeps them from going back.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import NewPartitions, NewTopic

from mirrordrill.harness.drill.replicators import FlowSpec, ReplicationSetup, make_replicator
from mirrordrill.harness.drill.replicators.mirrormaker2 import MirrorMaker2Replicator
from tests.integration.kafka_helpers import (
    partition_count,
    produce_values,
    topic_configs,
    topic_names,
    unique_topic,
    values_in,
    wait_for,
)

pytestmark = pytest.mark.integration

TOPICS = [".*mm2t-.*"]
CONFIG_TOPIC = unique_topic("mm2t-cfg")  # created before MM2 starts, with non-default configs


@pytest.fixture(scope="module")
def mm2(wan_env, artifacts, tmp_path_factory):
    """MM2 replicating east->west and west->east (active/active), started once for the module."""
    wan_env.link("east", "west").heal()
    east = wan_env.cluster("east")
    east.create_topics([NewTopic(CONFIG_TOPIC, 3, 1, config={
        "retention.ms": "7200000", "max.message.bytes": "200000",
        # Excluded from config sync by MM2's default filter: must not reach the remote topic.
        "message.timestamp.type": "LogAppendTime"})])
    setup = ReplicationSetup(wan_env, [FlowSpec("east", "west", topics=TOPICS), FlowSpec("west", "east", topics=TOPICS)],
                             workdir=tmp_path_factory.mktemp("mm2"))
    replicator = make_replicator("mirrormaker2", setup, artifacts=artifacts)
    started = time.monotonic()
    replicator.start()
    print(f"\nMM2 (2 processes) ready in {time.monotonic() - started:.1f}s")
    try:
        yield replicator
    finally:
        t0 = time.monotonic()
        replicator.stop()
        print(f"\nMM2 stopped in {time.monotonic() - t0:.1f}s")


def test_started_as_one_process_per_target_with_its_rendered_file(mm2: MirrorMaker2Replicator):
    assert mm2.running
    nodes = {n.target: n for n in mm2.nodes}
    assert set(nodes) == {"east", "west"}
    west = nodes["west"]
    text = west.config_path.read_text()
    # Placed at the target: the source is reached through the WAN proxy, the target locally.
    east_cluster, west_cluster = mm2.setup.env.cluster("east"), mm2.setup.env.cluster("west")
    assert f"east.bootstrap.servers = {east_cluster.wan_bootstrap('west')}" in text
    assert f"west.bootstrap.servers = {west_cluster.bootstrap}" in text
    assert "east->west.enabled = true" in text and "west->east" not in text
    assert west.process.argv[-2:] == ["--clusters", "west"]
    described = mm2.describe()
    assert [p["target"] for p in described["processes"]] == [n.target for n in mm2.nodes]
    assert all(path.exists() for path in mm2.log_paths().values())


def test_active_active_replicates_both_ways_without_loops(mm2: MirrorMaker2Replicator):
    env = mm2.setup.env
    east, west = env.cluster("east"), env.cluster("west")
    topic = unique_topic("mm2t-aa")  # the same name in both data centers, as in real active/active
    for cluster in (east, west):
        cluster.create_topics([NewTopic(topic, 2, 1)])
    from_east = [f"east-{i}".encode() for i in range(60)]
    from_west = [f"west-{i}".encode() for i in range(60)]
    assert produce_values(east.bootstrap, topic, from_east) == [None] * 60
    assert produce_values(west.bootstrap, topic, from_west) == [None] * 60

    on_west, on_east = mm2.remote_topic("east", topic), mm2.remote_topic("west", topic)
    assert (on_west, on_east) == (f"east.{topic}", f"west.{topic}")  # DefaultReplicationPolicy renames
    wait_for(lambda: len(values_in(west, on_west)) >= 60, 90, f"{on_west} on west")
    wait_for(lambda: len(values_in(east, on_east)) >= 60, 90, f"{on_east} on east")

    # Let several topic refreshes (5 s) pass: a loop would show up as east.west.* / west.east.* topics.
    time.sleep(12)
    for cluster in (east, west):
        looped = {f"east.west.{topic}", f"west.east.{topic}"} & topic_names(cluster)
        assert not looped, f"records went back where they came from: {looped} on {cluster.name}"
    assert sorted(values_in(west, on_west)) == sorted(from_east)
    assert sorted(values_in(east, on_east)) == sorted(from_west)
    # The local topics hold only their own writes: nothing was mirrored into them.
    assert sorted(values_in(west, topic)) == sorted(from_west)


def test_remote_topic_gets_source_partitions_and_configs(mm2: MirrorMaker2Replicator):
    east, west = mm2.setup.env.cluster("east"), mm2.setup.env.cluster("west")
    remote = mm2.remote_topic("east", CONFIG_TOPIC)
    # Brokers refuse auto-creation, so the remote topic exists only because MM2 created it.
    wait_for(lambda: partition_count(west, remote) == 3, 60, f"{remote} with 3 partitions")
    configs = topic_configs(west, remote)
    assert configs["retention.ms"] == "7200000"
    assert configs["max.message.bytes"] == "200000"
    assert configs["message.timestamp.type"] == "CreateTime", "excluded by MM2's config filter"

    admin = east.admin()  # must outlive its future
    admin.create_partitions([NewPartitions(CONFIG_TOPIC, 4)])[CONFIG_TOPIC].result(timeout=15)
    started = time.monotonic()
    wait_for(lambda: partition_count(west, remote) == 4, 60, f"{remote} growing to 4 partitions")
    print(f"\npartition increase reached the remote topic after {time.monotonic() - started:.1f}s")


def test_topic_created_mid_run_is_discovered_and_replicated(mm2: MirrorMaker2Replicator):
    east, west = mm2.setup.env.cluster("east"), mm2.setup.env.cluster("west")
    topic = unique_topic("mm2t-new")
    created = time.monotonic()
    east.create_topics([NewTopic(topic, 2, 1)])
    values = [f"new-{i}".encode() for i in range(40)]
    assert produce_values(east.bootstrap, topic, values) == [None] * 40
    remote = mm2.remote_topic("east", topic)
    wait_for(lambda: partition_count(west, remote) == 2, 60, f"{remote} created by MM2")
    wait_for(lambda: sorted(values_in(west, remote)) == sorted(values), 60,
             f"all records of {topic} on west")
    print(f"\nnew topic replicated {time.monotonic() - created:.1f}s after creation (refresh interval 5 s)")

    # A topic outside the filter stays home.
    other = unique_topic("other")
    east.create_topics([NewTopic(other, 1, 1)])
    produce_values(east.bootstrap, other, [b"x"])
    time.sleep(8)
    assert mm2.remote_topic("east", other) not in topic_names(west)


def _consume_and_commit(bootstrap: str, topic: str, group: str, upto: int) -> None:
    """Consume ``topic`` (1 partition) as ``group`` and commit exactly offset ``upto``."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "log_level": 0})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        position = -1
        while position + 1 < upto and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                position = msg.offset()
        assert position + 1 >= upto, f"consumed only up to {position}"
        consumer.commit(offsets=[TopicPartition(topic, 0, upto)], asynchronous=False)
    finally:
        consumer.close()


def test_checkpoints_translate_conservatively_and_monotonically(mm2: MirrorMaker2Replicator):
    east, west = mm2.setup.env.cluster("east"), mm2.setup.env.cluster("west")
    topic, group = unique_topic("mm2t-ck"), f"mm2t-group-{uuid.uuid4().hex[:6]}"
    east.create_topics([NewTopic(topic, 1, 1)])
    values = [f"ck-{i}".encode() for i in range(300)]
    assert produce_values(east.bootstrap, topic, values) == [None] * 300
    remote = mm2.remote_topic("east", topic)
    wait_for(lambda: len(values_in(west, remote)) >= 300, 90, f"{remote} replicated")
    replicated = values_in(west, remote)

    # The group has processed the first 100 records (committed offset 100) on the source.
    _consume_and_commit(east.bootstrap, topic, group, 100)
    committed = time.monotonic()
    first = wait_for(lambda: mm2.translate_offsets(group, "east", "west").get((remote, 0)), 90,
                     f"a checkpoint of {group} on {remote}")
    print(f"\nfirst checkpoint {time.monotonic() - committed:.1f}s after the commit: upstream 100 -> downstream {first}")
    # Never ahead: resuming at the translated offset on west re-reads, but never skips, what the
    # group had not processed on east.
    assert 0 <= first <= 100
    assert set(values[100:]) <= set(replicated[first:])

    # The group catches up completely; once MM2's offset syncs reach the end (offset flush, 5 s),
    # the translation is exact: a planned failover after draining reprocesses nothing.
    _consume_and_commit(east.bootstrap, topic, group, 300)
    committed = time.monotonic()
    wait_for(lambda: mm2.translate_offsets(group, "east", "west").get((remote, 0)) == 300, 90,
             f"the checkpoint of {group} on {remote} reaching 300")
    print(f"exact checkpoint (300 -> 300) {time.monotonic() - committed:.1f}s after the final commit")

    history = [cp for cp in mm2.checkpoints("east", "west", group) if (cp.topic, cp.partition) == (remote, 0)]
    upstream = [cp.upstream_offset for cp in history]
    downstream = [cp.downstream_offset for cp in history]
    print(f"checkpoint history (upstream -> downstream): {sorted(set(zip(upstream, downstream, strict=True)))}")
    assert upstream == sorted(upstream) and downstream == sorted(downstream), "checkpoints must be monotonic"
    assert all(d <= u for u, d in zip(upstream, downstream, strict=True)), "a checkpoint ahead of the source commit"


def test_heartbeats_are_emitted_and_replicated_upstream(mm2: MirrorMaker2Replicator):
    since = int(time.time() * 1000) - 20_000

    def ours(topic: str, pair: tuple[str, str]) -> list[int]:
        return [h.timestamp_ms for h in mm2.heartbeats("west", topic, since_ms=since) if (h.source_alias, h.target_alias) == pair]

    # The east->west flow emits about one heartbeat a second into west's own heartbeats topic.
    def five_local() -> list[int] | None:
        stamps = ours("heartbeats", ("east", "west"))
        return stamps if len(stamps) >= 5 else None

    stamps = wait_for(five_local, 30, "5 heartbeats of east->west on west")
    assert stamps == sorted(stamps)
    # east's own heartbeats (emitted there by the west->east flow) come back to west renamed:
    # proof that a record went east -> west within the last seconds.
    upstream = wait_for(lambda: ours(mm2.remote_topic("east", "heartbeats"), ("west", "east")), 30,
                        "east.heartbeats on west")
    assert upstream == sorted(upstream)
    assert "west.east.heartbeats" not in topic_names(mm2.setup.env.cluster("west"))
    notes = " ".join(mm2.metrics().notes)
    assert "newest upstream heartbeat on west" in notes


def test_metrics_show_each_replicated_partition(mm2: MirrorMaker2Replicator):
    east = mm2.setup.env.cluster("east")
    topic = unique_topic("mm2t-m")
    east.create_topics([NewTopic(topic, 2, 1)])
    produce_values(east.bootstrap, topic, [f"m-{i}".encode() for i in range(30)])

    def caught_up():
        rows = [r for r in mm2.metrics().for_flow("east->west") if r.topic == topic]
        return rows if len(rows) == 2 and all(r.lag_records == 0 for r in rows) else None

    rows = wait_for(caught_up, 60, f"zero lag on {topic}")
    assert sum(r.source_end_offset for r in rows) == 30
    assert {r.remote_topic for r in rows} == {f"east.{topic}"}
    later = [r for r in mm2.metrics().for_flow("east->west") if r.topic == topic]
    assert all(r.records_per_s == 0.0 for r in later), "nothing new was produced between the samples"


def test_restart_after_kill_9_loses_nothing(mm2: MirrorMaker2Replicator):
    east, west = mm2.setup.env.cluster("east"), mm2.setup.env.cluster("west")
    topic = unique_topic("mm2t-crash")
    east.create_topics([NewTopic(topic, 2, 1)])
    acked: list[bytes] = []
    stop = threading.Event()

    def produce():
        i = 0
        while not stop.is_set():
            batch = [f"crash-{i + j}".encode() for j in range(20)]
            errors = produce_values(east.bootstrap, topic, batch)
            acked.extend(v for v, e in zip(batch, errors, strict=True) if e is None)
            i += 20
            time.sleep(0.2)

    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    try:
        remote = mm2.remote_topic("east", topic)
        wait_for(lambda: len(values_in(west, remote)) > 50, 60, "replication under way")
        mm2.kill()
        assert not mm2.running
        time.sleep(3)  # records keep arriving on east while MM2 is down
        restarted = time.monotonic()
        mm2.start()
        print(f"\nMM2 ready {time.monotonic() - restarted:.1f}s after restart from kill -9")
        time.sleep(3)
    finally:
        stop.set()
        producer.join(30)
    assert len(acked) > 100
    expected = Counter(acked)

    def all_arrived():
        got = Counter(values_in(west, remote))
        return got if set(expected) <= set(got) else None

    got = wait_for(all_arrived, 120, "every acknowledged record on west")
    duplicates = sum(n - 1 for n in got.values() if n > 1)
    print(f"{len(expected)} acknowledged, all replicated; {duplicates} duplicate(s) after the crash")
    assert set(got) == set(expected), "only acknowledged records may appear on the target"
