"""The bundled PySpark replicator against real clusters: MirrorMaker 2's semantics, and better translation."""

from __future__ import annotations

import json
import time
import urllib.request
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions, NewTopic, ResourceType

from mirrordrill.harness.drill.replicators.pyspark import PySparkReplicator
from mirrordrill.harness.drill.replicators.setup import FlowSpec, ReplicationSetup
from mirrordrill.replicator.headers import source_offset_of
from mirrordrill.replicator.mm2_format import Checkpoint, Heartbeat
from tests.prometheus_text import parse

from .kafka_helpers import (
    consume_and_commit,
    partition_count,
    read_records,
    topic_configs,
    topic_names,
    unique_topic,
    values_in,
    wait_for,
)

pytestmark = pytest.mark.integration

TOPICS = ["pst-.*"]
CONFIG_TOPIC = unique_topic("pst-cfg")  # exists before the replicator starts, with non-default configs
BACKLOG = [f"before-start-{i}".encode() for i in range(60)]  # in CONFIG_TOPIC before the replicator starts


@pytest.fixture(scope="module")
def repl(first_start_env, artifacts):
    east = first_start_env.cluster("east")
    east.create_topics([NewTopic(CONFIG_TOPIC, 3, 1, config={"retention.ms": "7200000", "min.insync.replicas": "1",
                                                               "cleanup.policy": "delete"})])
    produce(east.bootstrap, CONFIG_TOPIC, BACKLOG, partition=lambda i: i % 3)
    setup = ReplicationSetup(env=first_start_env, flows=[
        FlowSpec("east", "west", topics=TOPICS, settings={"sync.group.offsets.enabled": "true"}),
        FlowSpec("west", "east", topics=TOPICS),
    ], workdir=first_start_env.workdir / "pyspark-replicator")
    r = PySparkReplicator(setup, artifacts=artifacts)
    with r:
        yield r


def produce(bootstrap: str, topic: str, values: list[bytes], **kwargs) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "log_level": 0})
    for i, v in enumerate(values):
        p.produce(topic, v, **{k: (w(i) if callable(w) else w) for k, w in kwargs.items()})
    assert p.flush(30) == 0


def test_one_process_per_location_with_mm2_style_config(repl: PySparkReplicator):
    assert {n.location for n in repl.nodes} == {"east", "west"}
    for node in repl.nodes:
        text = node.config_path.read_text()
        assert "clusters = east, west" in text
        remote = "east" if node.location == "west" else "west"
        assert f"{remote}->{node.location}.enabled = true" in text
        assert repl.setup.env.cluster(remote).wan_bootstrap(node.location) in text  # consume remote
        assert repl.setup.env.cluster(node.location).bootstrap in text  # produce local


def test_records_keep_partition_order_key_headers_and_timestamp(repl: PySparkReplicator):
    east, west = repl.setup.env.cluster("east"), repl.setup.env.cluster("west")
    topic = unique_topic("pst-order")
    east.create_topics([NewTopic(topic, 3, 1)])
    base_ts = int(time.time() * 1000) - 60_000  # an hour-old timestamp would be preserved just the same
    produce(east.bootstrap, topic, [f"v{i}".encode() for i in range(300)],
            partition=lambda i: i % 3, key=lambda i: f"k{i}".encode(), timestamp=lambda i: base_ts + i,
            headers=lambda i: [("app", f"h{i}".encode())])
    remote = repl.remote_topic("east", topic)
    wait_for(lambda: len(values_in(west, remote)) >= 300, 120, f"300 records in {remote}")
    assert partition_count(west, remote) == 3
    records = read_records(west.bootstrap, remote, 3)
    assert len(records) == 300, "duplicates or losses"
    for m in records:
        i = int(m.value()[1:])
        assert m.partition() == i % 3 and m.key() == f"k{i}".encode()
        assert m.timestamp()[1] == base_ts + i, "the source timestamp must be kept"
        headers = dict(m.headers())
        assert headers["app"] == f"h{i}".encode()
        assert "__mirrordrill.ts" not in headers  # the interceptor strips its carrier header
        assert source_offset_of(m.headers()) == m.offset()  # same partition, same offset: nothing reordered
    for p in range(3):
        in_p = [int(m.value()[1:]) for m in records if m.partition() == p]
        assert in_p == sorted(in_p)


def test_active_active_replicates_both_ways_without_loops(repl: PySparkReplicator):
    east, west = repl.setup.env.cluster("east"), repl.setup.env.cluster("west")
    a, b = unique_topic("pst-aa-east"), unique_topic("pst-aa-west")
    east.create_topics([NewTopic(a, 1, 1)])
    west.create_topics([NewTopic(b, 1, 1)])
    produce(east.bootstrap, a, [b"from-east"] * 20)
    produce(west.bootstrap, b, [b"from-west"] * 20)
    wait_for(lambda: len(values_in(west, f"east.{a}")) == 20 and len(values_in(east, f"west.{b}")) == 20,
             120, "both directions")
    time.sleep(8)  # two refresh intervals: a loop would have created east.west... / west.east... by now
    assert not [t for t in topic_names(east) | topic_names(west) if t.startswith(("east.west.", "west.east."))]
    assert len(values_in(west, f"east.{a}")) == 20 and len(values_in(east, f"west.{b}")) == 20


def test_remote_topic_gets_partitions_and_configs_with_mm2_exclusions(repl: PySparkReplicator):
    west = repl.setup.env.cluster("west")
    remote = repl.remote_topic("east", CONFIG_TOPIC)
    wait_for(lambda: partition_count(west, remote) == 3, 60, f"{remote} created")
    configs = topic_configs(west, remote)
    assert configs["retention.ms"] == "7200000"
    # min.insync.replicas is on MM2's exclusion list: the target keeps its own value
    assert configs["min.insync.replicas"] == topic_configs(west, "__mirrordrill_ready")["min.insync.replicas"]


def test_new_topic_partition_increase_and_config_change_propagate(repl: PySparkReplicator):
    east, west = repl.setup.env.cluster("east"), repl.setup.env.cluster("west")
    topic = unique_topic("pst-live")
    east.create_topics([NewTopic(topic, 1, 1)])
    produce(east.bootstrap, topic, [b"first"] * 10)
    remote = repl.remote_topic("east", topic)
    wait_for(lambda: len(values_in(west, remote)) == 10, 120, "a topic created mid-run to replicate")

    admin = east.admin()  # must outlive its futures
    admin.create_partitions([NewPartitions(topic, 3)])[topic].result(timeout=15)
    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([res])[res].result(timeout=15)
    wait_for(lambda: partition_count(west, remote) == 3, 60, "the partition increase to propagate")
    produce(east.bootstrap, topic, [f"p{i % 3}".encode() for i in range(30)], partition=lambda i: i % 3)
    wait_for(lambda: len(values_in(west, remote)) == 40, 120, "records of the new partitions")
    wait_for(lambda: topic_configs(west, remote)["retention.ms"] == "3600000", 60, "the config change")


def test_checkpoints_translate_exactly_and_never_ahead(repl: PySparkReplicator):
    east, west = repl.setup.env.cluster("east"), repl.setup.env.cluster("west")
    topic, group = unique_topic("pst-ck"), f"pst-group-{uuid.uuid4().hex[:6]}"
    east.create_topics([NewTopic(topic, 1, 1)])
    produce(east.bootstrap, topic, [f"{i}".encode() for i in range(200)])
    remote = repl.remote_topic("east", topic)
    wait_for(lambda: len(values_in(west, remote)) == 200, 120, "replication")
    consume_and_commit(east.bootstrap, topic, group, 0, 120)
    translated = repl.translate_offsets(group, "east", "west")
    # Exact: the record at target offset 120 is the one the group has not processed yet.
    assert translated == {(remote, 0): 120}
    records = read_records(west.bootstrap, remote, 1)
    assert source_offset_of(records[120].headers()) == 120

    consume_and_commit(east.bootstrap, topic, group, 0, 170)
    ckpt_topic = "east.checkpoints.internal"

    def checkpoints():
        return [cp for m in read_records(west.bootstrap, ckpt_topic, 1)
                if (cp := Checkpoint.decode(m.key(), m.value())).group == group]
    cps = wait_for(lambda: [c for c in checkpoints() if c.upstream_offset == 170] and checkpoints(), 60,
                   "a checkpoint for the new commit")
    downs = [c.downstream_offset for c in cps]
    assert downs == sorted(downs), "checkpoints must be monotonic"
    assert all(c.downstream_offset <= c.upstream_offset for c in cps), "never ahead of the source position"
    assert cps[-1].downstream_offset == 170
    # with the source declared lost (unplanned failover), the newest checkpoint is the commit
    assert repl.translate_offsets(group, "east", "west", source_lost=True) == {(remote, 0): 170}

    # sync.group.offsets.enabled: the group is absent on the target, so its offset is written there
    from confluent_kafka import ConsumerGroupTopicPartitions
    admin = west.admin()

    def synced():
        res = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(timeout=15)
        return {tp.offset for tp in res.topic_partitions if tp.topic == remote} == {170}
    wait_for(synced, 60, "group offsets synced to the target")


def test_heartbeats_are_emitted_into_the_target(repl: PySparkReplicator):
    west = repl.setup.env.cluster("west")
    beats = [Heartbeat.decode(m.key(), m.value()) for m in read_records(west.bootstrap, "heartbeats", 1)]
    assert any(h.source_alias == "east" and h.target_alias == "west" for h in beats)
    newest = max(h.timestamp_ms for h in beats)
    assert time.time() * 1000 - newest < 30_000


def test_metrics_report_latency_and_lag(repl: PySparkReplicator):
    m = wait_for(lambda: (s := repl.metrics()) and any(p.replication_latency_ms is not None for p in s.partitions)
                 and s, 60, "metrics with latency")
    rows = [p for p in m.partitions if p.flow == "east->west"]
    assert rows and all(p.lag_records is not None for p in rows)
    status = json.loads(repl.nodes[1].status_path.read_text() if repl.nodes[1].location == "west"
                        else repl.nodes[0].status_path.read_text())
    assert status["flows"]["east->west"]
    # where a slow flow's time goes: the last micro-batch as Spark reported it
    batch = status["status"]["east->west"]["last_batch"]
    assert batch["batch_id"] >= 0 and batch["duration_ms"]["triggerExecution"] >= 0


def test_prometheus_endpoint_shows_latency_histogram_lag_and_startup(repl: PySparkReplicator):
    west_node = next(n for n in repl.nodes if n.location == "west")
    url = wait_for(lambda: repl.status(west_node).get("prometheus_url"), 60, "the metrics URL in metrics.json")
    assert url.startswith("http://127.0.0.1:") and url.endswith("/metrics")
    assert f"metrics: {url}" in west_node.log_path.read_text()
    assert next(p for p in repl.describe()["processes"] if p["name"] == west_node.name)["metrics_url"] == url
    east = repl.setup.env.cluster("east")
    topic = unique_topic("pst-prom")
    east.create_topics([NewTopic(topic, 1, 1)])
    produce(east.bootstrap, topic, [f"p{i}".encode() for i in range(40)])
    remote = repl.remote_topic("east", topic)

    def scraped():
        with urllib.request.urlopen(url, timeout=10) as resp:
            fams = parse(resp.read().decode())
        copied = [v for _, lab, v in fams["mirrordrill_replicator_records_copied_total"]["samples"]
                  if lab["topic"] == remote and lab["flow"] == "east->west"]
        return fams if sum(copied) >= 40 else None
    fams = wait_for(scraped, 120, f"{remote} copied, as the metrics endpoint says")
    p = "mirrordrill_replicator_"
    hist = [(n, lab, v) for n, lab, v in fams[p + "replication_latency_seconds"]["samples"] if lab["topic"] == remote]
    count = sum(v for n, _, v in hist if n.endswith("_count"))
    inf = sum(v for n, lab, v in hist if n.endswith("_bucket") and lab["le"] == "+Inf")
    copied = sum(v for _, lab, v in fams[p + "records_copied_total"]["samples"] if lab["topic"] == remote)
    assert count == inf == copied >= 40  # a histogram of every record, not of an average
    assert sum(v for n, _, v in hist if n.endswith("_sum")) > 0
    assert {lab["flow"] for _, lab, _ in fams[p + "lag_records"]["samples"]} == {"east->west"}
    starts = {lab["flow"]: v for _, lab, v in fams[p + "query_starts_total"]["samples"]}
    assert starts["east->west"] >= 1
    phases = {lab["phase"] for _, lab, _ in fams[p + "startup_seconds"]["samples"]}
    assert {"spark_session", "first_query", "first_record"} <= phases


def test_ready_once_the_query_is_live_with_each_start_up_phase_recorded(repl: PySparkReplicator):
    west_node = next(n for n in repl.nodes if n.location == "west")
    log_text = west_node.log_path.read_text()
    # the harness counted the replicator ready (the fixture returned) only once its query was live
    assert "east->west: query live" in log_text
    # micro-batch (this fixture's mode): the warm-up batch runs before the first query, as ever
    assert log_text.index("east->west: Spark warmed up") < log_text.index("east->west: replicating")
    assert log_text.index("east->west: replicating") < log_text.index("east->west: query live")
    doc = repl.status(west_node)
    assert doc["status"]["east->west"]["live"] is True
    t = doc["startup"]
    # the resume positions were read beside the JVM's start, before the first query needed them
    assert t["positions_s"] is not None and t["positions_s"] <= t["first_query_s"]
    assert t["jvm_s"] <= t["spark_session_s"] <= t["warm_up_s"] <= t["first_query_s"] <= t["query_live_s"]
    # records that were there before the start land once
    west = repl.setup.env.cluster("west")
    remote = repl.remote_topic("east", CONFIG_TOPIC)
    wait_for(lambda: len(values_in(west, remote)) >= len(BACKLOG), 120, "the backlog replicated")
    assert sorted(values_in(west, remote)) == sorted(BACKLOG)


def test_kill_9_and_restart_loses_nothing(repl: PySparkReplicator):
    east, west = repl.setup.env.cluster("east"), repl.setup.env.cluster("west")
    topic = unique_topic("pst-crash")
    east.create_topics([NewTopic(topic, 2, 1)])
    remote = repl.remote_topic("east", topic)
    produce(east.bootstrap, topic, [f"a{i}".encode() for i in range(500)], partition=lambda i: i % 2)
    wait_for(lambda: len(values_in(west, remote)) >= 500, 120, "first batch")
    repl.kill()
    assert not repl.running
    produce(east.bootstrap, topic, [f"b{i}".encode() for i in range(500)], partition=lambda i: i % 2)
    repl.start()
    expected = {f"a{i}".encode() for i in range(500)} | {f"b{i}".encode() for i in range(500)}
    wait_for(lambda: expected <= set(values_in(west, remote)), 180, "everything after the restart")
