"""A Kafka cluster (one emulated data center) made of local broker processes."""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

from mirrordrill.harness.lab.brokers.broker import BrokerPorts, BrokerRunner, BrokerSettings, KafkaBroker, format_storages
from mirrordrill.harness.lab.brokers.secure import BrokerSecurity, LocalClusterSecurity
from mirrordrill.primitives.kafka.existing_cluster import ExistingClusterDef
from mirrordrill.primitives.kafka.security import ResolvedSecurity
from mirrordrill.primitives.kafka.topics import create_topics
from mirrordrill.primitives.process import ProcessError

READY_TOPIC = "__mirrordrill_ready"  # "__" keeps it out of every replicator's default filter


class ClusterNotReady(ProcessError):
    """A cluster did not become usable in time; the message carries the broker log tails."""


@dataclass(frozen=True)
class ClusterSpec:
    """How one data center's cluster should look."""

    name: str
    brokers: int = 1
    heap_mb: int = 512
    broker_jit: str = "c1"  # primitives.jvm_jit (harness.lab.brokers.broker.broker_jvm_options says why c1)
    broker_properties: dict[str, str] = field(default_factory=dict)
    security: LocalClusterSecurity | None = None
    # A team's own cluster: nothing is started, the harness reaches it through its Kafka proxy
    # (``harness.lab.brokers.existing``); ``brokers`` is then what the cluster reported at start.
    existing: ExistingClusterDef | None = None

    def security_facts(self) -> dict[str, str | bool | None]:
        """How clients reach this cluster, for summary.json: protocol, SASL mechanism, TLS, mutual TLS.

        Never a credential: the names of the protocol and mechanism only."""
        if self.existing is not None:
            sec = self.existing.security
            return {"protocol": sec.protocol, "sasl_mechanism": sec.sasl_mechanism if sec.uses_sasl else None,
                    "tls": sec.uses_tls, "mutual_tls": sec.uses_tls and sec.cert_pem is not None}
        if self.security is None:
            return {"protocol": "PLAINTEXT", "sasl_mechanism": None, "tls": False, "mutual_tls": False}
        sasl = self.security.protocol == "SASL_SSL"
        # SSL clients present a certificate (ssl.client.auth=required); SASL_SSL ones authenticate by SASL.
        return {"protocol": self.security.protocol, "sasl_mechanism": self.security.sasl_mechanism if sasl else None,
                "tls": True, "mutual_tls": not sasl}

    def default_properties(self) -> dict[str, str]:
        """Broker settings sized for a laptop-class machine; replication factors fit the size."""
        rf = min(3, self.brokers)
        return {
            "num.network.threads": "2",
            "num.io.threads": "4",
            "num.partitions": "1",
            "default.replication.factor": str(rf),
            "min.insync.replicas": "2" if self.brokers >= 3 else "1",
            "offsets.topic.replication.factor": str(rf),
            "offsets.topic.num.partitions": "10",
            "transaction.state.log.replication.factor": str(rf),
            "transaction.state.log.min.isr": str(min(2, rf)),
            "transaction.state.log.num.partitions": "10",
            "share.coordinator.state.topic.replication.factor": str(rf),
            "share.coordinator.state.topic.min.isr": str(min(2, rf)),
            "group.initial.rebalance.delay.ms": "0",
            # The active controller's no-op record (an idle log's heartbeat for the quorum's health
            # metrics) every 5 s instead of 0.5 s: an idle broker then burns about a third less CPU,
            # and a suite keeps a dozen of them alive beside the drills. They feed the quorum's
            # progress metrics; registration, elections and fencing do not wait on them.
            "metadata.max.idle.interval.ms": "5000",
            # Replicators must create remote topics explicitly with the right partition count;
            # auto-creation would hide that bug behind a 1-partition topic.
            "auto.create.topics.enable": "false",
            "unclean.leader.election.enable": "false",
        }


def new_cluster_id() -> str:
    """A KRaft cluster id (a base64url UUID without padding, never starting with '-')."""
    while True:
        # A leading '-' would read as an option on StorageTool's command line (Kafka's own
        # Uuid.randomUuid regenerates those too).
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


class ClusterSecurity(Protocol):
    """What the clients' side reads of a cluster's security: ``BrokerSecurity`` for a cluster we start,
    ``existing.ExistingSecurity`` for a team's."""

    def client(self) -> ResolvedSecurity: ...

    def client_file(self, kind: str = ...) -> Path: ...

    def secret_values(self) -> list[str]: ...


class ClusterClients:
    """What the drill's clients need of a cluster, whoever runs it: addresses, security, admin,
    topic creation and a real readiness check. Subclasses provide ``name``, ``brokers`` (each with
    ``node_id``, ``ports``, ``local_address``, ``wan_address()``, ``log_path`` and ``process``) and
    ``security``."""

    name: str
    brokers: list
    security: ClusterSecurity | None = None
    # Where the readiness check writes; an existing cluster uses a name under the drill's prefix.
    ready_topic = READY_TOPIC

    # --- addresses --------------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        """Bootstrap servers for clients inside this data center."""
        return ",".join(b.local_address for b in self.brokers)

    def wan_bootstrap(self, from_cluster: str) -> str:
        """Bootstrap servers for clients in ``from_cluster``: through the WAN proxies."""
        return ",".join(b.wan_address(from_cluster) for b in self.brokers)

    def bootstrap_from(self, client_cluster: str | None) -> str:
        """Local bootstrap for clients in this cluster (or None), WAN bootstrap otherwise."""
        return self.bootstrap if client_cluster in (None, self.name) else self.wan_bootstrap(client_cluster)

    def broker(self, node_id: int) -> KafkaBroker:
        for b in self.brokers:
            if b.node_id == node_id:
                return b
        raise KeyError(f"cluster {self.name} has no broker {node_id} (brokers: {[b.node_id for b in self.brokers]})")

    @property
    def log_paths(self) -> list[Path]:
        return [b.log_path for b in self.brokers]

    # --- clients ----------------------------------------------------------------------
    @property
    def client_security(self) -> ResolvedSecurity:
        """How the drill's clients authenticate here (PLAINTEXT for a plain local cluster)."""
        return self.security.client() if self.security else ResolvedSecurity()

    def security_config(self) -> dict[str, str]:
        """librdkafka security settings of the drill's clients ({} for a plain cluster)."""
        return self.security.client().librdkafka() if self.security else {}

    def security_file(self, kind: str = "librdkafka") -> Path | None:
        """The clients' security settings in a 0600 file of the secret folder (None for a plain cluster)."""
        return self.security.client_file(kind) if self.security else None

    def admin(self, from_cluster: str | None = None, **conf) -> AdminClient:
        # log_level 0: expected connection errors while brokers restart would flood stderr.
        return AdminClient({**self.client_config(from_cluster), "log_level": 0, **conf})

    def client_config(self, from_cluster: str | None = None) -> dict[str, str]:
        return {"bootstrap.servers": self.bootstrap_from(from_cluster), **self.security_config()}

    def ensure_users(self, timeout_s: float = 30.0) -> None:
        """Create (or update) the SCRAM user of a secure cluster, as the harness's certificate on INTERNAL."""
        sec = self.security
        if not isinstance(sec, BrokerSecurity) or not sec.needs_users:  # an existing cluster's users are the team's
            return
        internal = ",".join(f"127.0.0.1:{b.ports.internal}" for b in self.brokers)
        admin = AdminClient({"bootstrap.servers": internal, "log_level": 0, **sec.admin().librdkafka()})
        mechanism = getattr(ScramMechanism, sec.spec.sasl_mechanism.replace("-", "_"))
        upsert = UserScramCredentialUpsertion(sec.spec.username, ScramCredentialInfo(mechanism, 8192),
                                              str(sec.password).encode())
        for future in admin.alter_user_scram_credentials([upsert], request_timeout=timeout_s).values():
            future.result(timeout=timeout_s)

    def create_topics(self, topics: Iterable[NewTopic], timeout_s: float = 30.0) -> None:
        """Create topics, treating 'already exists' as success."""
        create_topics(self.admin(), topics, timeout_s)

    # --- readiness --------------------------------------------------------------------
    def wait_ready(self, timeout_s: float = 120.0, from_cluster: str | None = None) -> float:
        """Block until a client can create a topic and produce/consume on it; returns seconds taken."""
        started = time.monotonic()
        deadline = started + timeout_s
        last_error = "no attempt yet"
        while time.monotonic() < deadline:
            self._raise_if_dead()
            try:
                self.ensure_users(timeout_s=min(15.0, max(1.0, deadline - time.monotonic())))
                round_trip(self, from_cluster, timeout_s=min(15.0, max(1.0, deadline - time.monotonic())),
                           topic=self.ready_topic)
                return time.monotonic() - started
            except (KafkaException, TimeoutError) as e:
                last_error = f"{type(e).__name__}: {e}"  # a bare TimeoutError says nothing by itself
                time.sleep(0.5)
        raise ClusterNotReady(f"cluster {self.name} not ready after {timeout_s:.0f}s: {last_error}\n" + self._tails())

    def _raise_if_dead(self) -> None:
        dead = [b for b in self.brokers if not b.running and not b.process.paused]
        if dead:
            raise ClusterNotReady(
                f"cluster {self.name}: broker(s) {[b.node_id for b in dead]} exited "
                f"(code {[b.process.returncode for b in dead]})\n" + self._tails())

    def _tails(self) -> str:
        return "\n".join(f"--- {b.log_path} (last lines) ---\n{b.process.log_tail(20)}" for b in self.brokers)



class KafkaCluster(ClusterClients):
    """The brokers of one data center the harness starts, with whole-cluster lifecycle."""

    def __init__(self, spec: ClusterSpec, ports: list[BrokerPorts], workdir: Path,
                 java: str, classpath: tuple[str | Path, ...], security: BrokerSecurity | None = None,
                 runner: BrokerRunner | None = None, cluster_id: str | None = None):
        if len(ports) != spec.brokers:
            raise ValueError(f"cluster {spec.name}: {spec.brokers} brokers but {len(ports)} port sets")
        self.spec = spec
        self.name = spec.name
        self.workdir = workdir
        self.cluster_id = cluster_id or new_cluster_id()
        self.security = security
        voters = ",".join(f"{i + 1}@127.0.0.1:{p.controller}" for i, p in enumerate(ports))
        props = spec.default_properties() | spec.broker_properties
        settings = BrokerSettings(cluster_name=spec.name, cluster_id=self.cluster_id, quorum_voters=voters,
                                  java=java, classpath=classpath, heap_mb=spec.heap_mb, properties=props,
                                  security=security, jit=spec.broker_jit)
        self.brokers = [KafkaBroker(i + 1, p, workdir / f"broker-{i + 1}", settings, runner)
                        for i, p in enumerate(ports)]

    # --- lifecycle --------------------------------------------------------------------
    def format(self) -> None:
        format_storages(self.brokers)

    def start(self) -> None:
        for b in self.brokers:
            if not b.running:
                b.start()

    def stop(self) -> None:
        for b in reversed(self.brokers):
            b.stop()

    def kill(self) -> None:
        for b in self.brokers:
            b.kill()

    def pause(self) -> None:
        for b in self.brokers:
            b.pause()

    def resume(self) -> None:
        for b in self.brokers:
            b.resume()

    def restart(self, timeout_s: float = 120.0) -> None:
        """Stop every broker and start again with data kept; returns when usable."""
        self.stop()
        self.start()
        self.wait_ready(timeout_s)

    def wipe(self) -> None:
        """Kill every broker, delete all data, format afresh; ``start`` brings up an empty cluster."""
        self.kill()
        for b in self.brokers:
            b.wipe()


def round_trip(cluster: ClusterClients, from_cluster: str | None = None, timeout_s: float = 15.0,
               topic: str = READY_TOPIC, on_step: Callable[[str], None] | None = None) -> None:
    """Create ``topic`` (if needed), produce one record with acks=all and read it back."""
    rf = min(3, len(cluster.brokers))
    create_topics(cluster.admin(from_cluster), [NewTopic(topic, 1, rf)], timeout_s)
    conf = cluster.client_config(from_cluster)
    token = uuid.uuid4().hex.encode()
    producer = Producer({**conf, "acks": "all", "enable.idempotence": True,
                         "message.timeout.ms": int(timeout_s * 1000), "log_level": 0})
    delivered: list = []
    producer.produce(topic, token, on_delivery=lambda err, msg: delivered.append((err, msg)))
    producer.flush(timeout_s)
    if not delivered:
        raise TimeoutError(f"produce to {topic} on {cluster.name} not acknowledged within {timeout_s:.0f}s")
    err, msg = delivered[0]
    if err is not None:
        raise KafkaException(err)
    producer.close() if hasattr(producer, "close") else None
    consumer = Consumer({**conf, "group.id": f"__mirrordrill-ready-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "log_level": 0})
    try:
        consumer.assign([TopicPartition(topic, msg.partition(), msg.offset())])
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            rec = consumer.poll(0.5)
            if rec is None or rec.error():
                continue
            if rec.value() == token:
                return
        raise TimeoutError(f"record produced to {topic} on {cluster.name} not read back within {timeout_s:.0f}s")
    finally:
        consumer.close()
