"""A team's own Kafka cluster in a drill: found by address, reached through a Kafka proxy of ours.

Kafka clients bootstrap anywhere, then connect to the addresses the brokers advertise, which a
drill cannot change on someone else's cluster. So the harness puts its metadata-rewriting proxy
(``harness.lab.network.kafka_proxy``) in front of the cluster with exactly the listeners a broker
of ours would have: a ``local`` one per broker for clients in the same data center, and one per
remote data center, advertised at the Toxiproxy port that forwards to it. Every path the
drill's clients take then goes through the proxy, and every WAN path through Toxiproxy, so a
blackhole or a partition really cuts the replicator. Nothing of the team's brokers is started,
stopped or configured: lifecycle faults are refused here as they are at validation.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka.admin import AdminClient

from mirrordrill.harness.lab.brokers import owned_names
from mirrordrill.harness.lab.brokers.broker import BrokerPorts
from mirrordrill.harness.lab.brokers.cluster import ClusterClients, ClusterNotReady, ClusterSpec
from mirrordrill.harness.lab.brokers.existing_connect import ClusterUnreachable, client_config
from mirrordrill.harness.lab.network.kafka_proxy import guard
from mirrordrill.harness.lab.network.kafka_proxy.process import KafkaProxyProcess
from mirrordrill.harness.lab.network.kafka_proxy.spec import LOCAL, DownstreamTls, KafkaProxySpec, ProxyListener, UpstreamTls
from mirrordrill.primitives.config_refs import ConfigRefError, RefResolver
from mirrordrill.primitives.kafka.existing_cluster import ExistingClusterDef
from mirrordrill.primitives.kafka.security import ResolvedSecurity
from mirrordrill.primitives.kafka.tls import CertificateAuthority, IssuedCert
from mirrordrill.primitives.ports import LOOPBACK
from mirrordrill.primitives.process import ManagedProcess
from mirrordrill.primitives.properties_syntax import format_property
from mirrordrill.primitives.secret_dir import SecretDir
from mirrordrill.replicator.policy import HEARTBEATS_TOPIC


class ExistingClusterError(RuntimeError):
    """An existing cluster could not be reached, or an action on it is not the drill's to take."""


@dataclass(frozen=True)
class UpstreamNode:
    node_id: int
    address: str  # host:port as the broker advertises it


def discover_nodes(definition: ExistingClusterDef, refs: RefResolver, name: str,
                   timeout_s: float = 20.0) -> list[UpstreamNode]:
    """The cluster's brokers as it advertises them (read once at start, with the team's own settings)."""
    try:
        conf = client_config(definition, None, refs)
    except ClusterUnreachable as e:
        raise ExistingClusterError(f"cluster {name}: {e}") from None
    admin = AdminClient({**conf, "log_level": 0, "socket.timeout.ms": str(int(timeout_s * 1000))})
    try:  # the client is held while waiting: a dropped client cancels its own request
        described = admin.describe_cluster(request_timeout=timeout_s).result(timeout=timeout_s + 5)
    except Exception as e:  # noqa: BLE001 - any failure here means the same thing to the user
        raise ExistingClusterError(
            f"cluster {name}: cannot reach {definition.bootstrap_servers} with its security settings "
            f"({type(e).__name__}: {e}); check the addresses and credentials with 'mirrordrill plan FILE'") from None
    nodes = sorted((UpstreamNode(n.id, f"{n.host}:{n.port}") for n in described.nodes), key=lambda n: n.node_id)
    if not nodes:
        raise ExistingClusterError(f"cluster {name}: {definition.bootstrap_servers} reported no broker")
    return nodes


def resolve_upstream(definition: ExistingClusterDef, refs: RefResolver, name: str) -> ResolvedSecurity:
    try:
        return definition.security.resolve(refs)
    except ConfigRefError as e:
        raise ExistingClusterError(f"cluster {name}: {e}") from None


@dataclass
class ExistingSecurity:
    """How the drill's clients reach an existing cluster: its SASL settings, and TLS to our proxy.

    The proxy terminates TLS with a certificate from the drill's throwaway CA (valid for the
    loopback addresses clients use) and opens TLS to the team's brokers with the team's trust
    and key material; SASL frames pass through it untouched, so the brokers still authenticate
    the drill's user. The drill's clients therefore trust the drill CA and present no certificate.
    """

    cluster: str
    upstream: ResolvedSecurity = field(repr=False)
    secrets: SecretDir | None = None
    ca: CertificateAuthority | None = None
    proxy_cert: IssuedCert | None = None
    needs_users = False  # users are the team's business

    @classmethod
    def create(cls, cluster: str, upstream: ResolvedSecurity, secrets: SecretDir | None,
               ca: CertificateAuthority | None) -> ExistingSecurity:
        cert = ca.issue(f"{cluster}-kafka-proxy") if upstream.uses_tls and ca is not None else None
        return cls(cluster, upstream, secrets, ca, cert)

    def client(self) -> ResolvedSecurity:
        u = self.upstream
        return ResolvedSecurity(protocol=u.protocol, sasl_mechanism=u.sasl_mechanism, username=u.username,
                                password=u.password,
                                ca_pem=str(self.ca.cert_pem) if self.ca and u.uses_tls else None)

    def client_file(self, kind: str = "librdkafka") -> Path:
        if self.secrets is None:
            raise ExistingClusterError(f"cluster {self.cluster}: no secret folder for its client settings")
        settings = self.client().librdkafka() if kind == "librdkafka" else self.client().jvm()
        text = "".join(format_property(k, v) + "\n" for k, v in settings.items())
        return self.secrets.file(f"{self.cluster}-client-{kind}.properties", text)

    def proxy_tls(self) -> tuple[UpstreamTls | None, DownstreamTls | None]:
        u = self.upstream
        if not u.uses_tls:
            return None, None
        key_password_file = None
        if u.key_password and self.secrets is not None:
            key_password_file = str(self.secrets.file(f"{self.cluster}-proxy-key-password", u.key_password))
        upstream = UpstreamTls(ca_pem=u.ca_pem, cert_pem=u.cert_pem, key_pem=u.key_pem,
                               key_password_file=key_password_file, verify_hostname=u.verify_hostname)
        assert self.proxy_cert is not None
        return upstream, DownstreamTls(cert_pem=str(self.proxy_cert.cert_pem), key_pem=str(self.proxy_cert.key_pem))

    def secret_values(self) -> list[str]:
        """The password, the key password, and every private key involved (ours and the team's)."""
        keys = [Path(p) for p in (self.upstream.key_pem, self.proxy_cert.key_pem if self.proxy_cert else None) if p]
        return self.upstream.secrets() + [k.read_text() for k in keys if k.exists()]


@dataclass
class ProxiedBroker:
    """One of the team's brokers as the drill's clients see it: listeners of our proxy."""

    cluster: str
    node_id: int
    upstream: str
    ports: BrokerPorts
    process: ManagedProcess  # the cluster's proxy: one process serves every broker
    config_path: Path

    @property
    def name(self) -> str:
        return f"{self.cluster} broker {self.node_id} ({self.upstream}) via the kafka proxy"

    @property
    def log_path(self) -> Path:
        return self.process.log_path

    @property
    def local_address(self) -> str:
        return f"{LOOPBACK}:{self.ports.local}"

    def wan_address(self, from_cluster: str) -> str:
        return f"{LOOPBACK}:{self.ports.wan_advertised[from_cluster]}"

    @property
    def running(self) -> bool:
        return self.process.running


def refusals_path(workdir: Path, cluster: str) -> Path:
    """Where the proxy of ``cluster`` records the writes it refused (JSON lines; read by the drill engine)."""
    return workdir / f"kafka-proxy-{cluster}-refusals.jsonl"


def proxy_spec(name: str, nodes: list[UpstreamNode], ports: list[BrokerPorts],
               tls: tuple[UpstreamTls | None, DownstreamTls | None], owned_prefix: str | None = None,
               refusals_file: Path | None = None) -> KafkaProxySpec:
    """Listeners and advertised addresses that mirror a local broker's: ``local``, and one per remote.

    With ``owned_prefix`` the proxy refuses writes to names the drill does not own (``kafka_proxy.guard``).
    """
    listeners: list[ProxyListener] = []
    advertised: dict[str, dict[int, int]] = {LOCAL: {}}
    for node, p in zip(nodes, ports, strict=True):
        listeners.append(ProxyListener(listen_port=p.local, node_id=node.node_id, location=LOCAL))
        advertised[LOCAL][node.node_id] = p.local
        for remote, port in p.wan.items():
            listeners.append(ProxyListener(listen_port=port, node_id=node.node_id, location=remote))
            advertised.setdefault(remote, {})[node.node_id] = p.wan_advertised[remote]
    return KafkaProxySpec(name=name, upstream={n.node_id: n.address for n in nodes}, listeners=listeners,
                          advertised=advertised, upstream_tls=tls[0], downstream_tls=tls[1],
                          owned_prefix=owned_prefix, refusals_file=str(refusals_file) if refusals_file else None,
                          quiet_topics=(HEARTBEATS_TOPIC,) if owned_prefix else ())


def refused_writes(clusters: Iterable[object]) -> str | None:
    """One plain line for the writes the proxies of existing clusters refused during a drill, or None."""
    lines: list[str] = []
    files = [p for p in (getattr(c, "refusals_file", None) for c in clusters) if p is not None and p.exists()]
    for path in files:
        for text in path.read_text(encoding="utf-8").splitlines():
            try:
                lines.append(guard.describe(json.loads(text)))
            except (ValueError, KeyError, TypeError):  # a line cut short by the proxy's kill still counts
                if text.strip():
                    lines.append(f"the Kafka proxy refused a write (its record is unreadable: {text[:200]!r})")
    if not lines:
        return None
    more = f" (and {len(lines) - 1} more refusal(s), listed in {', '.join(map(str, files))})" if len(lines) > 1 else ""
    return lines[0] + more


class ExistingKafkaCluster(ClusterClients):
    """A team's cluster behind our Kafka proxy: the same client surface as a cluster we start."""

    def __init__(self, spec: ClusterSpec, nodes: list[UpstreamNode], ports: list[BrokerPorts], workdir: Path,
                 security: ExistingSecurity, owned_prefix: str):
        if len(ports) != len(nodes):
            raise ValueError(f"cluster {spec.name}: {len(nodes)} brokers but {len(ports)} port sets")
        self.spec = spec
        self.name = spec.name
        self.workdir = workdir
        self.security = security
        self.owned_prefix = owned_prefix
        self.ready_topic = f"{owned_prefix}ready"  # the readiness check writes under the drill's prefix
        workdir.mkdir(parents=True, exist_ok=True)
        # the spec names key files: it goes to the secret folder when there is one
        self.refusals_file = refusals_path(workdir, spec.name)
        guarded = proxy_spec(spec.name, nodes, ports, security.proxy_tls(), owned_prefix, self.refusals_file)
        self.proxy = KafkaProxyProcess(guarded, workdir,
                                       spec_dir=security.secrets.path if security.secrets else None)
        self.brokers = [ProxiedBroker(spec.name, n.node_id, n.address, p, self.proxy.process, self.proxy.spec_path)
                        for n, p in zip(nodes, ports, strict=True)]

    @property
    def existing(self) -> ExistingClusterDef:
        assert self.spec.existing is not None
        return self.spec.existing

    def start(self) -> None:
        if not self.proxy.process.running:
            self.proxy.start()

    def stop(self) -> None:
        self.proxy.stop()

    def format(self) -> None:
        pass  # nothing of ours to format

    def _refused(self, what: str):
        raise ExistingClusterError(f"{what} on {self.name} is refused: it is an existing cluster, whose brokers "
                                   "are not the drill's; cut its paths instead (link blackhole or partition)")

    def kill(self) -> None:
        self._refused("kill")

    def pause(self) -> None:
        self._refused("pause")

    def resume(self) -> None:
        self._refused("resume")

    def restart(self, timeout_s: float = 120.0) -> None:
        self._refused("restart")

    def wipe(self) -> None:
        """A failback's wipe, on a team's cluster: delete only the drill's own topics and groups (its
        prefix, and the internal topics of its aliases), so they start again empty at offset 0."""
        admin = self.admin()
        found = owned_names.find(admin, self.name, self.owned_prefix)
        done = owned_names.remove(admin, found)
        if done.errors:
            raise ExistingClusterError(f"cluster {self.name}: could not delete the drill's names: "
                                       + "; ".join(done.errors))

    def _raise_if_dead(self) -> None:
        if not self.proxy.process.running:
            raise ClusterNotReady(f"cluster {self.name}: its Kafka proxy exited "
                                  f"(code {self.proxy.process.returncode})\n" + self._tails())

    def _tails(self) -> str:
        p = self.proxy.process
        return f"--- {p.log_path} (last lines) ---\n{p.log_tail(20)}"
