"""The environment of one drill: Kafka clusters (data centers), Toxiproxy, and WAN links.

``Environment`` owns every process it starts and stops them all on every exit path: leave
the ``with`` block normally, by an exception or by Ctrl-C, and nothing is left running.
"""

from __future__ import annotations

import itertools
import re
import shutil
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from mirrordrill.harness.lab.brokers.broker import (
    BrokerPorts,
    BrokerRunner,
    LocalBrokerRunner,
    format_storages,
    listener_name_for,
)
from mirrordrill.harness.lab.brokers.class_archive import broker_archive
from mirrordrill.harness.lab.brokers.cluster import ClusterClients, ClusterSpec, KafkaCluster
from mirrordrill.harness.lab.brokers.existing import (
    ExistingKafkaCluster,
    ExistingSecurity,
    UpstreamNode,
    discover_nodes,
    resolve_upstream,
)
from mirrordrill.harness.lab.brokers.secure import BrokerSecurity
from mirrordrill.harness.lab.network.stable_address import StableAddress
from mirrordrill.harness.lab.network.toxiproxy import ToxiproxyServer
from mirrordrill.harness.lab.network.wan import ProxyRoute, WanLink, proxy_name
from mirrordrill.harness.lab.spark.standalone import SparkStandaloneCluster, StandaloneSpec
from mirrordrill.primitives.bootstrap import Artifacts, Bootstrap
from mirrordrill.primitives.config_refs import RefResolver
from mirrordrill.primitives.kafka.tls import CertificateAuthority
from mirrordrill.primitives.lifecycle import StartedInWith
from mirrordrill.primitives.ports import LOOPBACK, PortAllocator
from mirrordrill.primitives.process import ManagedProcess, ProcessSupervisor
from mirrordrill.primitives.secret_dir import SecretDir

CLUSTER_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")


class UnknownCluster(KeyError):
    """A name that is not one of the environment's clusters."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return self.args[0]


@dataclass(frozen=True)
class TopologySpec:
    """The data centers and which pairs of them have a WAN link (None: every pair)."""

    clusters: tuple[ClusterSpec, ...]
    links: tuple[tuple[str, str], ...] | None = None

    def __post_init__(self) -> None:
        names = [c.name for c in self.clusters]
        if not names:
            raise ValueError("a topology needs at least one cluster")
        for n in names:
            if not CLUSTER_NAME.match(n):
                raise ValueError(f"cluster name {n!r} is invalid: use a letter then letters, digits, '_' or '-' "
                                 "(no '.', which replication policies use as a separator)")
        seen: dict[str, str] = {}
        for n in names:
            key = listener_name_for(n)
            if key in seen:
                raise ValueError(f"cluster names {seen[key]!r} and {n!r} are the same once normalised; rename one")
            seen[key] = n
        for c in self.clusters:
            if c.brokers < 1:
                raise ValueError(f"cluster {c.name}: brokers must be >= 1, got {c.brokers}")
        for a, b in self.links or ():
            for end in (a, b):
                if end not in names:
                    raise ValueError(f"link {a}<->{b}: unknown cluster {end!r}; clusters are {names}")
            if a == b:
                raise ValueError(f"link {a}<->{b} joins a cluster to itself")

    def link_pairs(self) -> list[tuple[str, str]]:
        if self.links is None:
            return list(itertools.combinations([c.name for c in self.clusters], 2))
        unique: dict[frozenset, tuple[str, str]] = {}
        for a, b in self.links:
            unique.setdefault(frozenset((a, b)), (a, b))
        return list(unique.values())

    def remotes_of(self, name: str) -> list[str]:
        return sorted({b if a == name else a for a, b in self.link_pairs() if name in (a, b)})


@dataclass
class StartupReport:
    """How long each part of start-up took, in seconds."""

    toxiproxy_s: float = 0.0
    format_s: float = 0.0
    brokers_ready_s: dict[str, float] = field(default_factory=dict)
    total_s: float = 0.0
    spark_s: float | None = None  # the Spark standalone cluster, when a replicator asked for one


class Backend(Protocol):
    """Where the environment's brokers and Toxiproxy run: local processes, or containers."""

    name: str

    def open(self, workdir: Path) -> None:
        """Ready to make processes (check the engine, images); called once, before any start."""

    def broker_runner(self, artifacts: Artifacts, log: Callable[[str], None]) -> BrokerRunner: ...

    def toxiproxy_process(self, argv: list[str], log_path: Path) -> ManagedProcess | None:
        """The Toxiproxy server's process (None: a local process, as ToxiproxyServer makes it)."""

    def spark_launcher(self) -> Callable[..., ManagedProcess] | None:
        """How Spark standalone's master and workers run (None: local processes)."""

    def close(self) -> list[str]:
        """After every process stopped: remove what the backend made; returns problems seen."""

    def describe(self) -> dict:
        """Facts for summary.json's ``environment`` (at least ``backend``)."""


class ProcessBackend:
    """The default backend: everything is a local process on loopback."""

    name = "processes"

    def open(self, workdir: Path) -> None:
        pass

    def broker_runner(self, artifacts: Artifacts, log: Callable[[str], None]) -> BrokerRunner:
        # local JVMs map the brokers' class-data archive, made on the first broker's start
        return LocalBrokerRunner(archive=broker_archive(artifacts.java, artifacts.broker_classpath, log))

    def toxiproxy_process(self, argv: list[str], log_path: Path) -> ManagedProcess | None:
        return None

    def spark_launcher(self) -> Callable[..., ManagedProcess] | None:
        return None

    def close(self) -> list[str]:
        return []

    def describe(self) -> dict:
        return {"backend": self.name}


def plan_ports(spec: TopologySpec, take: Callable[[str], int]) -> dict[str, list[BrokerPorts]]:
    """Every broker's ports, each from ``take(cluster name)`` in a fixed order (so a fixed ``take``
    gives a fixed plan: docker-compose.chaos.yml's ports)."""
    plan: dict[str, list[BrokerPorts]] = {}
    for c in spec.clusters:
        remotes = spec.remotes_of(c.name)
        def t(cluster: str = c.name) -> int:
            return take(cluster)

        plan[c.name] = [BrokerPorts(local=t(), controller=t(), wan={r: t() for r in remotes},
                                    wan_advertised={r: t() for r in remotes},
                                    internal=t() if c.security else None) for _ in range(c.brokers)]
    return plan


def proxy_routes(clusters: Mapping[str, ClusterClients], a: str, b: str) -> Iterable[ProxyRoute]:
    """The proxies of the link a<->b: one per broker and direction, listening where the broker advertises."""
    for client, server in ((a, b), (b, a)):
        for broker in clusters[server].brokers:
            yield ProxyRoute(
                name=proxy_name(client, server, broker.node_id), client_cluster=client, server_cluster=server,
                listen_port=broker.ports.wan_advertised[client],
                upstream=f"{LOOPBACK}:{broker.ports.wan[client]}",
            )


class Environment(StartedInWith):
    """Starts and owns the clusters, the Toxiproxy server and the WAN links of one topology."""

    def __init__(self, spec: TopologySpec, workdir: Path, artifacts: Artifacts | None = None,
                 log: Callable[[str], None] | None = None, refs: RefResolver | None = None,
                 backend: Backend | None = None, owned_prefix: str = "mirrordrill-",
                 keep_broker_data: bool = False):
        self.spec = spec
        # A drill's brokers write gigabytes (a capacity sweep's point 1.2 GB, so a sweep filled the
        # disk): their log segments go at stop, on either backend; their logs and properties stay.
        self.keep_broker_data = keep_broker_data
        self.owned_prefix = owned_prefix  # names the harness itself puts on an existing cluster start with it
        self._refs = refs or RefResolver()
        # Key material and credentials of secure clusters: made at start, deleted at stop.
        self.secrets: SecretDir | None = None
        self.workdir = Path(workdir).resolve()
        self._artifacts = artifacts
        self.log = log or (lambda msg: None)
        self.backend: Backend = backend or ProcessBackend()
        existing = [c.name for c in spec.clusters if c.existing]
        if existing and self.backend.name != ProcessBackend.name:
            # The harness starts no broker of an existing cluster, so containers would only change where
            # Toxiproxy runs, and that pairing has not been run here: refused rather than claimed.
            raise ValueError(f"clusters {existing} are existing ones, which run on the processes backend "
                             "only: run without --backend docker")
        self.supervisor = ProcessSupervisor()
        self.clusters: dict[str, KafkaCluster | ExistingKafkaCluster] = {}
        self.links: dict[frozenset, WanLink] = {}
        self.toxiproxy: ToxiproxyServer | None = None
        self.stable_addresses: dict[str, StableAddress] = {}
        self.spark: SparkStandaloneCluster | None = None  # started on first use (standalone replicator)
        self._ports = PortAllocator()
        self.startup = StartupReport()
        self._started = False

    # --- access -----------------------------------------------------------------------
    def cluster(self, name: str) -> KafkaCluster | ExistingKafkaCluster:
        try:
            return self.clusters[name]
        except KeyError:
            raise UnknownCluster(f"unknown cluster {name!r}; clusters are {sorted(self.clusters)}") from None

    def link(self, a: str, b: str) -> WanLink:
        self.cluster(a), self.cluster(b)
        try:
            return self.links[frozenset((a, b))]
        except KeyError:
            raise UnknownCluster(f"no WAN link between {a!r} and {b!r}; links are "
                                 f"{sorted(link.name for link in self.links.values())}") from None

    def take_port(self) -> int:
        """A loopback port reserved for a listener of something the lab runs (until the lab stops)."""
        return self._ports.take()

    def add_stable_address(self, points_to: str, name: str = "clients") -> StableAddress:
        """A stable bootstrap address for applications, resolving to ``points_to`` for now."""
        cluster = self.cluster(points_to)
        if self.toxiproxy is None:
            raise RuntimeError("start the environment before adding a stable address")
        slots = max(len(c.brokers) for c in self.clusters.values())
        address = StableAddress(name, [self._ports.take() for _ in range(slots)], self.toxiproxy.client)
        address.create(cluster)
        self.stable_addresses[name] = address
        return address

    def remove_stable_address(self, name: str) -> None:
        self.stable_addresses.pop(name).remove()

    def spark_standalone(self, spec: StandaloneSpec | None = None) -> SparkStandaloneCluster:
        """This environment's Spark standalone cluster, started on first call and stopped with the rest.

        One per environment: a failback's replicators and a restarted replicator submit to the
        same cluster, as applications would to a shared one.
        """
        if self.spark is None:
            if not self._started:
                raise RuntimeError("start the environment before its Spark cluster")
            artifacts = self._artifacts or Bootstrap().ensure_all(with_allure=False)
            launcher = self.backend.spark_launcher()
            cluster = SparkStandaloneCluster(spec or StandaloneSpec(), self.workdir / "spark", self._ports,
                                             artifacts.java, **({"launcher": launcher} if launcher else {}))
            for p in cluster.processes:
                self.supervisor.add(p)
            self.log(f"starting a Spark standalone cluster ({cluster.spec.workers} workers) at {cluster.url}")
            self.startup.spark_s = cluster.start()
            self.spark = cluster
        return self.spark

    # --- lifecycle --------------------------------------------------------------------
    def start(self, timeout_s: float = 180.0) -> StartupReport:
        """Start Toxiproxy, the proxies and every cluster; returns when all clusters are usable."""
        t0 = time.monotonic()
        artifacts = self._artifacts or Bootstrap().ensure_all(with_allure=False)
        self._started = True
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.backend.open(self.workdir)
        ports = self._ports

        port = ports.take()
        argv = ToxiproxyServer.argv(artifacts.toxiproxy_server, port)
        self.toxiproxy = ToxiproxyServer(artifacts.toxiproxy_server, port, self.workdir,
                                         process=self.backend.toxiproxy_process(argv, self.workdir / "toxiproxy.log"))
        self.supervisor.add(self.toxiproxy.process)
        self.toxiproxy.start()
        self.startup.toxiproxy_s = time.monotonic() - t0

        broker_security, existing_security = self._make_security()
        nodes = self._discover_existing()
        broker_ports = plan_ports(self.spec, lambda cluster: ports.take())
        runner = self.backend.broker_runner(artifacts, self.log)
        for c in self.spec.clusters:
            if c.existing is not None:
                existing = ExistingKafkaCluster(c, nodes[c.name], broker_ports[c.name], self.workdir / c.name,
                                                existing_security[c.name], self.owned_prefix)
                self.supervisor.add(existing.proxy.process)
                self.clusters[c.name] = existing
                continue
            ours = KafkaCluster(c, broker_ports[c.name], self.workdir / c.name, artifacts.java,
                                artifacts.broker_classpath, security=broker_security.get(c.name), runner=runner)
            self.clusters[c.name] = ours
            for b in ours.brokers:
                self.supervisor.add(b.process)

        for a, b in self.spec.link_pairs():
            link = WanLink(a, b, proxy_routes(self.clusters, a, b), self.toxiproxy.client)
            link.create()
            self.links[frozenset((a, b))] = link

        t1 = time.monotonic()
        format_storages([b for c in self.clusters.values() if isinstance(c, KafkaCluster) for b in c.brokers])
        self.startup.format_s = time.monotonic() - t1

        for cluster in self.clusters.values():
            cluster.start()
        self.log(f"started {sum(len(c.brokers) for c in self.clusters.values())} broker(s); waiting until usable")
        # Readiness is only client calls, so waiting in threads is safe (processes were
        # started from this thread).
        with ThreadPoolExecutor(max_workers=len(self.clusters)) as pool:
            futs = {name: pool.submit(c.wait_ready, timeout_s) for name, c in self.clusters.items()}
            for name, f in futs.items():
                self.startup.brokers_ready_s[name] = f.result()
        self.startup.total_s = time.monotonic() - t0
        return self.startup

    def _make_security(self) -> tuple[dict[str, BrokerSecurity], dict[str, ExistingSecurity]]:
        """A CA and certificates for the secure clusters, and the settings of the existing ones, in a
        fresh secret folder (none when every cluster is a plain one of ours); by cluster name."""
        secure = [c for c in self.spec.clusters if c.security]
        existing = [c for c in self.spec.clusters if c.existing]
        if not secure and not existing:
            return {}, {}
        self.secrets = SecretDir(f"{self.workdir.parent.name}-{self.workdir.name}")
        ca = CertificateAuthority(self.secrets.path)
        ours: dict[str, BrokerSecurity] = {}
        theirs: dict[str, ExistingSecurity] = {}
        for c in existing:
            assert c.existing is not None
            upstream = resolve_upstream(c.existing, self._refs, c.name)
            theirs[c.name] = ExistingSecurity.create(c.name, upstream, self.secrets, ca)
        for c in secure:
            assert c.security is not None
            ours[c.name] = BrokerSecurity.create(c.name, c.security, c.brokers, self.secrets, ca,
                                                 c.security.resolve_password(self._refs))
        self.log(f"secure clusters {[c.name for c in secure]}: certificates and credentials in {self.secrets.path} "
                 "(deleted at the end)")
        return ours, theirs

    def _discover_existing(self) -> dict[str, list[UpstreamNode]]:
        """Each existing cluster's brokers, read with the team's settings; the topology gets their count."""
        found = {}
        for c in self.spec.clusters:
            if c.existing is not None:
                found[c.name] = discover_nodes(c.existing, self._refs, c.name)
                self.log(f"existing cluster {c.name}: {len(found[c.name])} broker(s) "
                         f"{[n.address for n in found[c.name]]}; the drill reaches them through its Kafka proxy")
        if found:
            self.spec = replace(self.spec, clusters=tuple(replace(c, brokers=len(found[c.name])) if c.name in found
                                                          else c for c in self.spec.clusters))
        return found

    def secret_values(self) -> list[str]:
        """Every password and private key of this environment's secure clusters (for leak checks)."""
        return [v for c in self.clusters.values() if c.security for v in c.security.secret_values()]

    def wan_bytes(self) -> dict[str, dict[str, int]]:
        """Per WAN link ("a<->b"), the bytes it carried each way so far ("a->b", "b->a")."""
        if self.toxiproxy is None or not self.links:
            return {}
        received = self.toxiproxy.client.received_bytes()
        return {link.name: link.bytes_carried(received) for link in self.links.values()}

    def stop(self) -> list[str]:
        """Stop every process this environment started (newest first), then delete its secrets; returns problems."""
        problems = self.supervisor.stop_all() if self._started else []
        self._started = False
        problems += self.backend.close()
        self._ports.close()  # after the listeners stopped: other runs may take these ports now
        if not self.keep_broker_data:
            self._remove_broker_data()
        if self.secrets is not None:
            self.secrets.remove()
        return problems

    def _remove_broker_data(self) -> None:
        removed = [b.data_dir for c in self.clusters.values() if isinstance(c, KafkaCluster) for b in c.brokers
                   if b.data_dir.exists()]
        for path in removed:
            shutil.rmtree(path, ignore_errors=True)
        if removed:
            self.log(f"deleted the log segments of {len(removed)} broker(s) (their logs stay; "
                     "'mirrordrill run --keep-broker-data' keeps the segments)")

    def wipe_files(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)

    # --- description ------------------------------------------------------------------
    def manifest(self) -> dict:
        """Addresses and log files of everything running, for people and for other tools."""
        return {
            "workdir": str(self.workdir),
            "environment": self.backend.describe(),
            "toxiproxy": {"api": f"http://{LOOPBACK}:{self.toxiproxy.port}" if self.toxiproxy else None,
                          "log": str(self.toxiproxy.process.log_path) if self.toxiproxy else None},
            "clusters": {
                name: {
                    "bootstrap": c.bootstrap,
                    "wan_bootstrap": {r: c.wan_bootstrap(r) for r in self.spec.remotes_of(name)},
                    "brokers": [{"node_id": b.node_id, "pid": b.process.pid, "log": str(b.log_path),
                                 "config": str(b.config_path)} for b in c.brokers],
                }
                for name, c in self.clusters.items()
            },
            "links": [link.describe() for link in self.links.values()],
            "spark": self.spark.describe() if self.spark else None,
            "stable_addresses": {n: {"bootstrap": a.bootstrap, "points_to": a.points_to}
                                 for n, a in self.stable_addresses.items()},
        }

