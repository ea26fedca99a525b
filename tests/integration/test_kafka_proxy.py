"""The metadata-rewriting Kafka proxy in front of real clusters: clients learn only proxy ports.

Each cluster gets one proxy process with two listeners per broker: ``local`` (clients told the
proxy's own ports) and ``dc2`` (clients told Toxiproxy ports that forward to the proxy), as a
drill against a team's own cluster would set it up. Every process is the environment's, so its
supervisor stops it on every exit path.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from mirrordrill.harness.lab.brokers.cluster import ClusterSpec
from mirrordrill.harness.lab.brokers.secure import LocalClusterSecurity
from mirrordrill.harness.lab.environment import Environment, TopologySpec
from mirrordrill.harness.lab.network.kafka_proxy import (
    DownstreamTls,
    KafkaProxyProcess,
    KafkaProxySpec,
    ProxyListener,
    UpstreamTls,
)
from mirrordrill.primitives.config_refs import RefResolver
from mirrordrill.primitives.kafka.tls import CertificateAuthority
from mirrordrill.primitives.ports import LOOPBACK, PortAllocator

pytestmark = pytest.mark.integration

REMOTE = "dc2"
RECORDS = 300


class ProxiedCluster:
    """A started cluster, its proxy, and the Toxiproxy proxies of the remote location."""

    def __init__(self, env: Environment, name: str, tmp, downstream: DownstreamTls | None = None,
                 upstream: UpstreamTls | None = None):
        self.env, self.cluster = env, env.cluster(name)
        ports = PortAllocator()
        nodes = [b.node_id for b in self.cluster.brokers]
        self.local = {n: ports.take() for n in nodes}
        self.remote_listen = {n: ports.take() for n in nodes}
        self.toxi = {n: ports.take() for n in nodes}
        self.real_ports = {b.ports.local for b in self.cluster.brokers}
        spec = KafkaProxySpec(
            name=name, upstream={b.node_id: b.local_address for b in self.cluster.brokers},
            listeners=[ProxyListener(listen_port=self.local[n], node_id=n, location="local") for n in nodes]
            + [ProxyListener(listen_port=self.remote_listen[n], node_id=n, location=REMOTE) for n in nodes],
            advertised={"local": self.local, REMOTE: self.toxi}, upstream_tls=upstream, downstream_tls=downstream)
        self.proxy = KafkaProxyProcess(spec, env.workdir / f"proxy-{name}", spec_dir=tmp, debug=True)
        env.supervisor.add(self.proxy.process)
        self.toxi_names = [f"kproxy-{name}-{n}" for n in nodes]
        for n, proxy_name in zip(nodes, self.toxi_names, strict=True):
            env.toxiproxy.client.create_proxy(proxy_name, self.toxi[n], f"{LOOPBACK}:{self.remote_listen[n]}")
        self.proxy.start()

    def bootstrap(self, location: str) -> str:
        ports = self.local if location == "local" else self.toxi
        return ",".join(f"{LOOPBACK}:{p}" for p in ports.values())

    def advertised(self, location: str) -> set[int]:
        return set((self.local if location == "local" else self.toxi).values())

    def set_remote_enabled(self, enabled: bool) -> None:
        for name in self.toxi_names:
            self.env.toxiproxy.client.set_enabled(name, enabled)


def stats_ports(client_conf: dict, make) -> tuple[object, list]:
    """A client whose librdkafka statistics (every broker connection it holds) are collected."""
    seen: list = []
    client = make({**client_conf, "statistics.interval.ms": 500, "stats_cb": lambda s: seen.append(json.loads(s))})
    return client, seen


def connected_ports(stats: list) -> set[int]:
    """Ports of every broker connection (learned or bootstrap) librdkafka reported as up."""
    out = set()
    for snapshot in stats:
        for broker in snapshot.get("brokers", {}).values():
            if broker.get("state") == "UP":
                out.add(int(broker["nodename"].rsplit(":", 1)[1]))
    return out


def produce_all(conf: dict, topic: str, count: int, timeout_s: float = 60.0) -> list:
    producer = Producer({**conf, "acks": "all", "message.timeout.ms": int(timeout_s * 1000), "log_level": 0})
    results: list = []
    for i in range(count):
        producer.produce(topic, key=str(i).encode(), value=f"v{i}".encode(),
                         on_delivery=lambda err, msg: results.append(err))
    producer.flush(timeout_s + 10)
    return results


def consume_group(pc: ProxiedCluster, conf: dict, topic: str, count: int, location: str) -> set[bytes]:
    """Read ``count`` records in a new group, commit them, and check every connection was a proxy port."""
    group = f"g-{uuid.uuid4().hex[:8]}"
    consumer, stats = stats_ports({**conf, "group.id": group, "auto.offset.reset": "earliest",
                                   "enable.auto.commit": False, "log_level": 0}, Consumer)
    got: set[bytes] = set()
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 120
        while len(got) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                got.add(msg.key())
        consumer.commit(asynchronous=False)  # needs the coordinator FindCoordinator named
        consumer.poll(1.0)  # one more statistics snapshot with the coordinator's connection
    finally:
        consumer.close()
    admin = AdminClient({**conf, "log_level": 0})
    committed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result()
    assert sum(tp.offset for tp in committed.topic_partitions) == count
    ports = connected_ports(stats)
    assert ports and ports <= pc.advertised(location), f"connections outside the proxy: {ports}"
    assert not ports & pc.real_ports
    return got


def check_metadata(pc: ProxiedCluster, conf: dict, location: str) -> None:
    admin = AdminClient({**conf, "log_level": 0})
    brokers = admin.list_topics(timeout=30).brokers
    assert {b.id for b in brokers.values()} == {b.node_id for b in pc.cluster.brokers}
    assert {(b.host, b.port) for b in brokers.values()} == {(LOOPBACK, p) for p in pc.advertised(location)}
    described = admin.describe_cluster(request_timeout=30).result()
    assert {(n.host, n.port) for n in described.nodes} == {(LOOPBACK, p) for p in pc.advertised(location)}


def create_topic(conf: dict, topic: str, replicas: int) -> None:
    admin = AdminClient({**conf, "log_level": 0})  # held until the answer: a collected client cancels it
    admin.create_topics([NewTopic(topic, 2, replicas)])[topic].result(timeout=60)


@pytest.fixture(scope="class")
def plain(artifacts, session_workdir, tmp_path_factory):
    spec = TopologySpec(clusters=(ClusterSpec("kp", brokers=2),))
    with Environment(spec, session_workdir / "kproxy-plain", artifacts) as env:
        yield ProxiedCluster(env, "kp", tmp_path_factory.mktemp("kproxy-plain-spec"))
    assert all(not p.running for p in env.supervisor.processes)


SECURE_PASSWORD = "pw-for-the-kafka-proxy-test"


@pytest.fixture(scope="class")
def secure(artifacts, session_workdir, tmp_path_factory):
    spec = TopologySpec(clusters=(ClusterSpec("kps", security=LocalClusterSecurity(password="${env:KP_PW}")),))
    refs = RefResolver({"KP_PW": SECURE_PASSWORD})
    secrets = tmp_path_factory.mktemp("kproxy-secure-spec")
    with Environment(spec, session_workdir / "kproxy-secure", artifacts, refs=refs) as env:
        broker_sec = env.cluster("kps").client_security
        ca = CertificateAuthority(secrets)  # the drill's own CA: clients trust it, not the broker's
        cert = ca.issue("kafka-proxy")
        pc = ProxiedCluster(env, "kps", secrets,
                            downstream=DownstreamTls(cert_pem=str(cert.cert_pem), key_pem=str(cert.key_pem)),
                            upstream=UpstreamTls(ca_pem=broker_sec.ca_pem))
        pc.client_ca = str(ca.cert_pem)
        yield pc
    assert all(not p.running for p in env.supervisor.processes)


class TestPlaintextTwoBrokers:
    @pytest.fixture
    def proxied(self, plain):
        return plain

    @pytest.mark.parametrize("location", ["local", REMOTE])
    def test_metadata_and_describe_cluster_name_only_advertised_ports(self, proxied, location):
        check_metadata(proxied, {"bootstrap.servers": proxied.bootstrap(location)}, location)

    @pytest.mark.parametrize("location", ["local", REMOTE])
    def test_produce_consume_and_commit_through_the_proxy(self, proxied, location):
        conf = {"bootstrap.servers": proxied.bootstrap(location)}
        topic = f"kp-{location}-{uuid.uuid4().hex[:6]}"
        create_topic(conf, topic, replicas=2)
        assert produce_all(conf, topic, RECORDS) == [None] * RECORDS
        assert consume_group(proxied, conf, topic, RECORDS, location) == {str(i).encode() for i in range(RECORDS)}

    def test_a_java_producer_through_the_proxy(self, proxied, artifacts):
        # The Java client speaks Produce v10+ (KIP-951 leader endpoints) when offered: the clamp keeps it at v9.
        conf = {"bootstrap.servers": proxied.bootstrap(REMOTE)}
        topic = f"kp-java-{uuid.uuid4().hex[:6]}"
        create_topic(conf, topic, replicas=2)
        cmd = [artifacts.java, "-Xmx256m", "-cp", os.pathsep.join(map(str, artifacts.broker_classpath)),
               "org.apache.kafka.tools.ProducerPerformance", "--topic", topic, "--num-records", str(RECORDS),
               "--record-size", "100", "--throughput", "-1",
               "--producer-props", f"bootstrap.servers={conf['bootstrap.servers']}", "acks=all"]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=180, cwd=proxied.env.workdir)
        assert done.returncode == 0, done.stderr[-2000:]
        admin = AdminClient({**conf, "log_level": 0})
        meta = admin.list_topics(topic, timeout=30).topics[topic]
        consumer = Consumer({**conf, "group.id": f"g-{uuid.uuid4().hex[:8]}", "log_level": 0})
        try:
            ends = [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in meta.partitions]
        finally:
            consumer.close()
        assert sum(ends) == RECORDS

    def test_a_wan_partition_on_toxiproxy_stops_the_remote_clients_traffic(self, proxied):
        conf = {"bootstrap.servers": proxied.bootstrap(REMOTE)}
        topic = f"kp-cut-{uuid.uuid4().hex[:6]}"
        create_topic(conf, topic, replicas=2)
        producer, stats = stats_ports({**conf, "acks": "all", "message.timeout.ms": 8000, "log_level": 0}, Producer)
        sent: list = []
        producer.produce(topic, b"before", on_delivery=lambda err, msg: sent.append(err))
        producer.flush(30)
        assert sent == [None]
        proxied.set_remote_enabled(False)
        try:
            producer.produce(topic, b"during", on_delivery=lambda err, msg: sent.append(err))
            producer.flush(30)
            assert len(sent) == 2 and sent[1] is not None, "a record went through a partitioned WAN"
        finally:
            proxied.set_remote_enabled(True)
        producer.produce(topic, b"after", on_delivery=lambda err, msg: sent.append(err))
        producer.flush(60)
        assert sent[2:] == [None]
        assert connected_ports(stats) <= proxied.advertised(REMOTE)


class TestSaslSslScram:
    @pytest.fixture
    def proxied(self, secure):
        return secure

    def conf(self, pc: ProxiedCluster, location: str = "local", **changes) -> dict:
        conf = pc.cluster.security_config() | {"bootstrap.servers": pc.bootstrap(location),
                                               "ssl.ca.location": pc.client_ca}
        return conf | changes

    def test_metadata_through_tls_termination(self, proxied):
        check_metadata(proxied, self.conf(proxied), "local")

    def test_round_trip_with_sasl_passed_through(self, proxied):
        conf = self.conf(proxied, REMOTE)
        topic = f"kps-{uuid.uuid4().hex[:6]}"
        create_topic(conf, topic, replicas=1)
        assert produce_all(conf, topic, RECORDS) == [None] * RECORDS
        assert consume_group(proxied, conf, topic, RECORDS, REMOTE) == {str(i).encode() for i in range(RECORDS)}

    def test_a_wrong_password_is_refused_by_the_broker_through_the_proxy(self, proxied):
        errors: list = []
        wrong = AdminClient(self.conf(proxied, **{"sasl.password": "wrong", "log_level": 0,
                                                  "error_cb": errors.append}))
        with pytest.raises(KafkaException):
            wrong.list_topics(timeout=10)
        for _ in range(10):  # error callbacks are served by poll
            wrong.poll(0.2)
        # The refusal is the broker's SaslAuthenticate answer, carried back through the proxy.
        assert any(e.code() == KafkaError._AUTHENTICATION and "SASL" in e.str() for e in errors), errors

    def test_the_broker_ca_alone_does_not_verify_the_proxy(self, proxied):
        # The client reaches the proxy's certificate, not the broker's: the broker's CA must fail.
        broker_ca = proxied.cluster.client_security.ca_pem
        other = AdminClient(self.conf(proxied, **{"ssl.ca.location": broker_ca, "log_level": 0}))
        with pytest.raises(KafkaException):
            other.list_topics(timeout=10)
