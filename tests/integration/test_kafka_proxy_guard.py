"""The Kafka proxy's guard on real brokers: writes to names the drill does not own are refused.

One cluster stands for a team's: its broker runs Kafka's authorizer (the harness's ANONYMOUS
connections are super users, so the broker itself would allow everything) and auto-creates
topics. The drill's clients reach it only through a proxy whose spec owns ``md-g-``. For each
guarded class the unowned name is refused (the client sees the authorization error, the broker,
read directly, shows nothing written, and the proxy recorded the refusal) and an owned one passes.
"""

from __future__ import annotations

import json
import socket
import struct
import time
import uuid

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from mirrordrill.harness.lab.brokers.cluster import ClusterSpec
from mirrordrill.harness.lab.environment import Environment, TopologySpec
from mirrordrill.harness.lab.network.kafka_proxy import KafkaProxyProcess, KafkaProxySpec, ProxyListener
from mirrordrill.harness.lab.network.kafka_proxy.guard import describe
from mirrordrill.primitives.ports import LOOPBACK, PortAllocator
from tests.integration.test_kafka_proxy import produce_all

pytestmark = pytest.mark.integration

PREFIX = "md-g-"
TEAM_TOPIC, OWNED_TOPIC = "team-orders", f"{PREFIX}orders"
BROKER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
          "super.users": "User:ANONYMOUS", "auto.create.topics.enable": "true"}


class Guarded:
    """The team's cluster (read directly) and the guarded proxy in front of it."""

    def __init__(self, env: Environment):
        self.cluster = env.cluster("team")
        ports = PortAllocator()
        local = {b.node_id: ports.take() for b in self.cluster.brokers}
        workdir = env.workdir / "guard-proxy"
        workdir.mkdir(parents=True, exist_ok=True)
        self.refusals_file = workdir / "refusals.jsonl"
        spec = KafkaProxySpec(
            name="team", upstream={b.node_id: b.local_address for b in self.cluster.brokers},
            listeners=[ProxyListener(listen_port=p, node_id=n, location="local") for n, p in local.items()],
            advertised={"local": local}, owned_prefix=PREFIX, refusals_file=str(self.refusals_file))
        self.proxy = KafkaProxyProcess(spec, workdir)
        env.supervisor.add(self.proxy.process)
        self.proxy.start()
        self.bootstrap = ",".join(f"{LOOPBACK}:{p}" for p in local.values())
        self.conf = {"bootstrap.servers": self.bootstrap, "log_level": 0}

    def direct(self) -> AdminClient:
        return self.cluster.admin()

    def proxied(self) -> AdminClient:
        return AdminClient(self.conf)

    def refusals(self) -> list[dict]:
        if not self.refusals_file.exists():
            return []
        return [json.loads(line) for line in self.refusals_file.read_text().splitlines()]

    def refused(self, api: str, name: str) -> list[dict]:
        return [r for r in self.refusals() if r["api"] == api and r["name"] == name]


@pytest.fixture(scope="module")
def guarded(artifacts, session_workdir):
    spec = TopologySpec(clusters=(ClusterSpec("team", broker_properties=BROKER),))
    with Environment(spec, session_workdir / "guarded-team", artifacts) as env:
        g = Guarded(env)
        admin = g.direct()
        for topic in (TEAM_TOPIC, OWNED_TOPIC):
            admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
        yield g


def error_code(future, timeout_s: float = 30) -> int:
    with pytest.raises(KafkaException) as raised:
        future.result(timeout=timeout_s)
    return raised.value.args[0].code()


def watermark(g: Guarded, topic: str) -> int:
    c = Consumer({"bootstrap.servers": g.cluster.bootstrap, "group.id": "unused", "log_level": 0})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=15)[1]
    finally:
        c.close()


def test_produce_to_a_team_topic_is_refused_and_to_an_owned_one_passes(guarded):
    refused = produce_all(guarded.conf, TEAM_TOPIC, 5, timeout_s=20)
    assert [e.code() if e else None for e in refused] == [KafkaError.TOPIC_AUTHORIZATION_FAILED] * 5
    assert produce_all(guarded.conf, OWNED_TOPIC, 5) == [None] * 5
    assert watermark(guarded, TEAM_TOPIC) == 0 and watermark(guarded, OWNED_TOPIC) == 5
    [record] = guarded.refused("Produce", TEAM_TOPIC)
    assert describe(record) == (f"the Kafka proxy in front of team refused Produce to topic '{TEAM_TOPIC}' from "
                                f"{record['client']}: the drill owns only names starting with '{PREFIX}'")
    assert "Produce" in guarded.proxy.process.log_tail(50)  # the error line in the proxy's log


def test_a_producer_cannot_make_the_broker_auto_create_a_team_topic(guarded):
    topic = f"team-auto-{uuid.uuid4().hex[:6]}"
    results = produce_all(guarded.conf, topic, 1, timeout_s=8)
    assert results[0] is not None
    assert topic not in guarded.direct().list_topics(timeout=15).topics
    # an owned name is still auto-created: the broker would have created the team's too
    owned = f"{PREFIX}auto-{uuid.uuid4().hex[:6]}"
    assert produce_all(guarded.conf, owned, 1) == [None]


def test_create_delete_partition_and_config_changes_of_team_topics_are_refused(guarded):
    admin = guarded.proxied()
    assert error_code(admin.create_topics([NewTopic("team-new", 1, 1)])["team-new"]) \
        == KafkaError.TOPIC_AUTHORIZATION_FAILED
    owned = f"{PREFIX}new"
    admin.create_topics([NewTopic(owned, 1, 1)])[owned].result(timeout=30)
    assert error_code(admin.delete_topics([TEAM_TOPIC])[TEAM_TOPIC]) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    topics = guarded.direct().list_topics(timeout=15).topics
    assert "team-new" not in topics and TEAM_TOPIC in topics and owned in topics

    def set_retention(topic: str):
        entry = ConfigEntry("retention.ms", "1234567", incremental_operation=AlterConfigOpType.SET)
        resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])
        return admin.incremental_alter_configs([resource])[resource]

    assert error_code(admin.create_partitions([NewPartitions(TEAM_TOPIC, 3)])[TEAM_TOPIC]) \
        == KafkaError.TOPIC_AUTHORIZATION_FAILED
    admin.create_partitions([NewPartitions(owned, 2)])[owned].result(timeout=30)
    partitions = guarded.direct().list_topics(timeout=15).topics
    assert len(partitions[TEAM_TOPIC].partitions) == 1 and len(partitions[owned].partitions) == 2
    assert error_code(set_retention(TEAM_TOPIC)) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    set_retention(owned).result(timeout=30)
    broker = ConfigResource(ResourceType.BROKER, str(guarded.cluster.brokers[0].node_id),
                            incremental_configs=[ConfigEntry("log.cleaner.threads", "2",
                                                             incremental_operation=AlterConfigOpType.SET)])
    assert error_code(admin.incremental_alter_configs([broker])[broker]) == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    direct = guarded.direct()
    for topic, expected in ((TEAM_TOPIC, False), (owned, True)):
        resource = ConfigResource(ResourceType.TOPIC, topic)
        configs = direct.describe_configs([resource])[resource].result(timeout=30)
        assert (configs["retention.ms"].value == "1234567") is expected, topic
    admin.delete_topics([owned])[owned].result(timeout=30)
    assert guarded.refused("CreateTopics", "team-new") and guarded.refused("DeleteTopics", TEAM_TOPIC)
    assert guarded.refused("IncrementalAlterConfigs", TEAM_TOPIC)


def consume_in_group(g: Guarded, group: str, topic: str, deadline_s: float = 60) -> KafkaError | None:
    """Join ``group`` on ``topic`` through the proxy and commit: the first consumer error, or None once committed."""
    consumer = Consumer({**g.conf, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                return msg.error()
            consumer.commit(msg, asynchronous=False)
            return None
        raise AssertionError(f"group {group}: neither a record nor an error within {deadline_s}s")
    finally:
        consumer.close()


def committed(g: Guarded, group: str, topic: str) -> int:
    request = [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])]
    admin = g.direct()
    return admin.list_consumer_group_offsets(request)[group].result(timeout=30).topic_partitions[0].offset


def test_joining_committing_or_deleting_a_team_group_is_refused(guarded):
    produce_all(guarded.conf, OWNED_TOPIC, 1)
    error = consume_in_group(guarded, "team-billing", OWNED_TOPIC)
    assert error is not None and error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED, error
    offsets = [ConsumerGroupTopicPartitions("team-billing", [TopicPartition(OWNED_TOPIC, 0, 1)])]
    admin = guarded.proxied()  # held while waiting: a dropped client cancels its request
    altered = admin.alter_consumer_group_offsets(offsets)["team-billing"].result(timeout=30)
    assert altered.topic_partitions[0].error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    assert committed(guarded, "team-billing", OWNED_TOPIC) < 0
    direct = guarded.direct()
    groups = {g.group_id for g in direct.list_consumer_groups(request_timeout=30).result().valid}
    assert "team-billing" not in groups
    owned = f"{PREFIX}billing"
    assert consume_in_group(guarded, owned, OWNED_TOPIC) is None
    assert committed(guarded, owned, OWNED_TOPIC) >= 1
    direct.alter_consumer_group_offsets([ConsumerGroupTopicPartitions("team-billing", [TopicPartition(
        OWNED_TOPIC, 0, 1)])])["team-billing"].result(timeout=30)  # the team's own group, made directly
    deleted = admin.delete_consumer_groups(["team-billing"])["team-billing"]
    assert error_code(deleted) == KafkaError.GROUP_AUTHORIZATION_FAILED
    assert committed(guarded, "team-billing", OWNED_TOPIC) == 1
    assert guarded.refused("JoinGroup", "team-billing") and guarded.refused("OffsetCommit", "team-billing")
    assert guarded.refused("DeleteGroups", "team-billing")


def test_acl_changes_are_always_refused(guarded):
    binding = AclBinding(ResourceType.TOPIC, OWNED_TOPIC, ResourcePatternType.LITERAL, "User:drill", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)
    admin = guarded.proxied()
    assert error_code(admin.create_acls([binding])[binding]) == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    every = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                             AclPermissionType.ANY)
    direct = guarded.direct()
    assert direct.describe_acls(every).result(timeout=30) == []
    direct.create_acls([binding])[binding].result(timeout=30)  # the broker itself would take it
    assert error_code(admin.delete_acls([every])[every]) == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    assert direct.describe_acls(every).result(timeout=30) == [binding]
    direct.delete_acls([every])[every].result(timeout=30)
    assert [r["kind"] for r in guarded.refusals() if r["api"] in ("CreateAcls", "DeleteAcls")] == ["cluster"] * 2


def api_versions(port: int) -> dict[int, tuple[int, int]]:
    """ApiVersions v0 through the proxy, on a raw socket: api -> (min, max)."""
    with socket.create_connection((LOOPBACK, port), timeout=10) as s:
        body = struct.pack(">hhih", 18, 0, 7, 1) + b"t"
        s.sendall(struct.pack(">i", len(body)) + body)
        size = struct.unpack(">i", recv_exact(s, 4))[0]
        data = recv_exact(s, size)
    count = struct.unpack_from(">i", data, 6)[0]
    entries = (struct.unpack_from(">hhh", data, 10 + 6 * i) for i in range(count))
    return {api: (lo, hi) for api, lo, hi in entries}


def recv_exact(s: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


def test_versions_the_guard_cannot_read_are_neither_offered_nor_let_through(guarded):
    port = guarded.proxy.ports[0]
    versions = api_versions(port)
    assert versions[0][1] == 9 and versions[20][1] <= 5 and versions[24][1] <= 3, versions
    # a Produce v12 (which the proxy did not offer) to an owned topic is refused unread: the connection closes
    with socket.create_connection((LOOPBACK, port), timeout=10) as s:
        body = struct.pack(">hhih", 0, 12, 9, 1) + b"t" + b"\x00" * 16
        s.sendall(struct.pack(">i", len(body)) + body)
        with pytest.raises(ConnectionError):
            recv_exact(s, 4)
    assert any(r["api"] == "Produce" and r["version"] == 12 and "up to version 9" in r["reason"]
               for r in guarded.refusals())
