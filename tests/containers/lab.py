"""Brokers and Toxiproxy as containers (testcontainers), wired like the local lab.

Our own ``DockerContainer`` subclasses (testcontainers' ``KafkaContainer`` assumes a Confluent
image, and no registry is reachable): host network, every listener on 127.0.0.1, ports from
``primitives.ports``. ``ContainerLab`` is an ``Environment`` whose brokers and proxy server
are containers: clients, WAN links and replicator adapters use it unchanged.
"""

from __future__ import annotations

import os
import shlex
import time
from pathlib import Path

# testcontainers reads its settings when imported: no Ryuk reaper (its image cannot be
# pulled here; our fixtures remove what they start) and the engine reached as the host.
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
os.environ.setdefault("TESTCONTAINERS_CONNECTION_MODE", "docker_host")

from confluent_kafka import KafkaException
from testcontainers.core.container import DockerContainer

from mirrordrill.harness.lab.brokers.broker import KafkaBroker
from mirrordrill.harness.lab.brokers.cluster import ClusterNotReady, KafkaCluster, round_trip
from mirrordrill.harness.lab.docker.engine import Engine
from mirrordrill.harness.lab.docker.images import broker_java_argv
from mirrordrill.harness.lab.environment import Environment, TopologySpec, plan_ports, proxy_routes
from mirrordrill.harness.lab.network.toxiproxy import ToxiproxyClient, ToxiproxyError
from mirrordrill.harness.lab.network.wan import WanLink
from mirrordrill.primitives.ports import LOOPBACK, PortAllocator

CONFIG_DIR = "/etc/mirrordrill"
DATA_DIR = "/var/lib/mirrordrill/data"
SESSION_LABEL = "mirrordrill.session"


class LabContainer(DockerContainer):
    """A container on the host network carrying our labels; removed by ``stop``."""

    def __init__(self, image: str, name: str, labels: dict[str, str]):
        super().__init__(image)
        self.lab_name = name
        self.with_kwargs(network_mode="host", labels={"mirrordrill": "test", **labels})

    def exited(self) -> bool:
        wrapped = self.get_wrapped_container()
        wrapped.reload()
        return wrapped.status in ("exited", "dead")

    def logs_tail(self, lines: int = 30) -> str:
        try:
            out, err = self.get_logs()
        except Exception as e:  # noqa: BLE001 - the container may already be gone
            return f"(no logs: {e})"
        text = (out or b"").decode(errors="replace") + (err or b"").decode(errors="replace")
        return "\n".join(text.splitlines()[-lines:])


class BrokerContainer(LabContainer):
    """One KRaft broker+controller: formats its storage, then execs the broker (one container)."""

    def __init__(self, image: str, broker: KafkaBroker, config_dir: Path, labels: dict[str, str]):
        super().__init__(image, f"broker {broker.name}", labels)
        config_dir.mkdir(parents=True, exist_ok=True)
        # The local broker's own properties, with its data inside the container.
        props = broker.properties() | {"log.dirs": DATA_DIR}
        (config_dir / "server.properties").write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        conf = f"{CONFIG_DIR}/server.properties"
        fmt = broker_java_argv("kafka.tools.StorageTool", "format", "-t", broker.settings.cluster_id,
                               "-c", conf, "--ignore-formatted", heap_mb=broker.settings.heap_mb,
                               jit=broker.settings.jit)
        run = broker_java_argv("kafka.Kafka", conf, heap_mb=broker.settings.heap_mb, jit=broker.settings.jit)
        self.with_volume_mapping(str(config_dir), CONFIG_DIR, "ro")
        self.with_command(["sh", "-c", f"{shlex.join(fmt)} >/dev/null && exec {shlex.join(run)}"])


class ToxiproxyContainer(LabContainer):
    def __init__(self, image: str, api_port: int, labels: dict[str, str]):
        super().__init__(image, "toxiproxy", labels)
        self.api_port = api_port
        self.with_command(["-host", LOOPBACK, "-port", str(api_port)])

    def client(self) -> ToxiproxyClient:
        return ToxiproxyClient(LOOPBACK, self.api_port)

    def wait_ready(self, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                self.client().version()
                return
            except ToxiproxyError:
                time.sleep(0.2)
        raise ClusterNotReady(f"toxiproxy container did not answer on {self.api_port}:\n{self.logs_tail()}")


class ContainerLab(Environment):
    """An Environment whose brokers and Toxiproxy server run in containers of our images."""

    def __init__(self, spec: TopologySpec, workdir: Path, images: dict[str, str], labels: dict[str, str],
                 engine: Engine, log=None):
        super().__init__(spec, workdir, log=log)
        self.images, self.labels, self.engine = images, labels, engine
        self.containers: list[LabContainer] = []
        self.toxiproxy_container: ToxiproxyContainer | None = None

    def start(self, timeout_s: float = 360.0):  # a loaded shared machine: JVMs in containers start slowly
        t0 = time.monotonic()
        self._started = True
        self.workdir.mkdir(parents=True, exist_ok=True)
        ports: PortAllocator = self._ports
        self.toxiproxy_container = ToxiproxyContainer(self.images["toxiproxy"], ports.take(), self.labels)
        self._start(self.toxiproxy_container)
        self.toxiproxy_container.wait_ready()
        self.startup.toxiproxy_s = time.monotonic() - t0
        broker_ports = plan_ports(self.spec, lambda cluster: ports.take())
        for c in self.spec.clusters:
            # KafkaCluster gives addresses, admin clients and the readiness probe; its processes never start.
            self.clusters[c.name] = KafkaCluster(c, broker_ports[c.name], self.workdir / c.name, "java", ())
        client = self.toxiproxy_container.client()
        for a, b in self.spec.link_pairs():
            link = WanLink(a, b, list(proxy_routes(self.clusters, a, b)), client)
            link.create()
            self.links[frozenset((a, b))] = link
        for cluster in self.clusters.values():
            for broker in cluster.brokers:
                self._start(BrokerContainer(self.images["broker"], broker, broker.workdir, self.labels))
        for name, cluster in self.clusters.items():
            self.startup.brokers_ready_s[name] = self._wait_ready(cluster, t0 + timeout_s)
        self.startup.total_s = time.monotonic() - t0
        return self.startup

    def _start(self, container: LabContainer) -> None:
        self.containers.append(container)  # before start: a half-started one is removed too
        container.start()

    def _wait_ready(self, cluster: KafkaCluster, deadline: float) -> float:
        t, last = time.monotonic(), "no attempt yet"
        while time.monotonic() < deadline:
            dead = [c for c in self.containers if c.exited()]
            if dead:
                raise ClusterNotReady("container(s) exited: " + "; ".join(
                    f"{c.lab_name}:\n{c.logs_tail()}" for c in dead))
            try:
                round_trip(cluster, timeout_s=10)
                return time.monotonic() - t
            except (KafkaException, TimeoutError) as e:
                last = str(e)
                time.sleep(0.5)
        raise ClusterNotReady(f"cluster {cluster.name} (containers) not ready: {last}\n" +
                              "\n".join(f"--- {c.lab_name}\n{c.logs_tail()}" for c in self.containers))

    def stop(self) -> list[str]:
        problems = super().stop()  # processes started on the host (a replicator)
        for container in reversed(self.containers):
            try:
                container.stop()
            except Exception as e:  # noqa: BLE001 - keep removing the others
                problems.append(f"{container.lab_name}: {e}")
        self.containers.clear()
        return problems
