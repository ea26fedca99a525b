"""One Kafka broker (KRaft) as a local process: its listeners, its files, its lifecycle."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from harness.kafka.secure import INTERNAL_LISTENER, BrokerSecurity
from primitives.ports import LOOPBACK
from primitives.process import ManagedProcess, ProcessError
from replicator.config.properties_syntax import format_property

LOG4J_CONFIG = Path(__file__).resolve().parent.parent / "resources" / "log4j2.properties"


def listener_name_for(remote_cluster: str) -> str:
    """The WAN listener a broker opens for clients of one remote data center."""
    return "WAN_" + re.sub(r"[^A-Za-z0-9]", "_", remote_cluster).upper()


@dataclass(frozen=True)
class BrokerPorts:
    """Ports of one broker: where it listens, and where remote clients reach it (the proxies)."""

    local: int
    controller: int
    wan: dict[str, int] = field(default_factory=dict)  # remote cluster -> listener port
    wan_advertised: dict[str, int] = field(default_factory=dict)  # remote cluster -> proxy port
    internal: int | None = None  # secure clusters: the brokers' own mutual-TLS listener


@dataclass
class BrokerSettings:
    """What a broker needs that its cluster decides."""

    cluster_name: str
    cluster_id: str
    quorum_voters: str
    java: str
    classpath: tuple[Path, ...]
    heap_mb: int = 512
    properties: dict[str, str] = field(default_factory=dict)
    security: BrokerSecurity | None = None


class KafkaBroker:
    """A combined broker+controller KRaft node; its data survives restarts until ``wipe``."""

    def __init__(self, node_id: int, ports: BrokerPorts, workdir: Path, settings: BrokerSettings):
        self.node_id = node_id
        self.ports = ports
        self.workdir = workdir
        self.settings = settings
        self.data_dir = workdir / "data"
        # A secure broker's properties hold its private key: they live in the secret folder.
        sec = settings.security
        self.config_path = (sec.secrets.path / f"{settings.cluster_name}-broker-{node_id}.properties" if sec
                            else workdir / "server.properties")
        self.log_path = workdir / "broker.log"
        self.process = ManagedProcess(
            name=f"kafka broker {settings.cluster_name}/{node_id}",
            argv=self._java_argv("kafka.Kafka", str(self.config_path)),
            log_path=self.log_path,
            cwd=workdir,
            infrastructure=True,
        )

    @property
    def name(self) -> str:
        return f"{self.settings.cluster_name}/{self.node_id}"

    @property
    def local_address(self) -> str:
        return f"{LOOPBACK}:{self.ports.local}"

    def wan_address(self, from_cluster: str) -> str:
        """Where a client in ``from_cluster`` reaches this broker (its Toxiproxy proxy)."""
        try:
            return f"{LOOPBACK}:{self.ports.wan_advertised[from_cluster]}"
        except KeyError:
            raise KeyError(f"broker {self.name} has no WAN link to cluster {from_cluster!r}") from None

    def properties(self) -> dict[str, str]:
        """The broker's server.properties, listeners laid out as the README's "How an emulated data center is wired" describes."""
        sec = self.settings.security
        client_protocol = sec.client_protocol if sec else "PLAINTEXT"
        listeners = [f"LOCAL://{LOOPBACK}:{self.ports.local}"]
        advertised = [f"LOCAL://{LOOPBACK}:{self.ports.local}"]
        protocols = [f"LOCAL:{client_protocol}", f"CONTROLLER:{'SSL' if sec else 'PLAINTEXT'}"]
        client_listeners = ["LOCAL"]
        for remote, port in sorted(self.ports.wan.items()):
            name = listener_name_for(remote)
            listeners.append(f"{name}://{LOOPBACK}:{port}")
            # Remote clients must reconnect through the proxy, so the proxy is what we advertise.
            advertised.append(f"{name}://{LOOPBACK}:{self.ports.wan_advertised[remote]}")
            protocols.append(f"{name}:{client_protocol}")
            client_listeners.append(name)
        inter_broker = "LOCAL"
        if sec:
            if self.ports.internal is None:
                raise ValueError(f"broker {self.name}: a secure cluster needs an internal port")
            # Brokers talk over mutual TLS: no user (and so no password) exists before they run.
            listeners.append(f"{INTERNAL_LISTENER}://{LOOPBACK}:{self.ports.internal}")
            advertised.append(f"{INTERNAL_LISTENER}://{LOOPBACK}:{self.ports.internal}")
            protocols.append(f"{INTERNAL_LISTENER}:SSL")
            inter_broker = INTERNAL_LISTENER
        listeners.append(f"CONTROLLER://{LOOPBACK}:{self.ports.controller}")
        props = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": self.settings.quorum_voters,
            "listeners": ",".join(listeners),
            "advertised.listeners": ",".join(advertised),
            "listener.security.protocol.map": ",".join(protocols),
            "inter.broker.listener.name": inter_broker,
            "controller.listener.names": "CONTROLLER",
            "log.dirs": str(self.data_dir),
        }
        if sec:
            props.update(sec.broker_properties(self.node_id, client_listeners))
        props.update(self.settings.properties)
        return props

    def write_config(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        lines = [format_property(k, str(v)) for k, v in self.properties().items()]
        text = "# written by mirrordrill\n" + "\n".join(lines) + "\n"
        if self.settings.security:
            self.settings.security.secrets.file(self.config_path.name, text)
        else:
            self.config_path.write_text(text)

    def format_storage(self) -> None:
        """``StorageTool format``: required once before the first start and after a wipe."""
        self.write_config()
        argv = self._java_argv("kafka.tools.StorageTool", "format", "-t", self.settings.cluster_id,
                               "-c", str(self.config_path), "--ignore-formatted")
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=self.workdir)
        if proc.returncode != 0:
            raise ProcessError(f"formatting storage of broker {self.name} failed:\n{proc.stdout}\n{proc.stderr}")

    def start(self) -> None:
        self.write_config()
        self.process.start()

    def stop(self) -> None:
        """Clean shutdown (SIGTERM; SIGKILL after the grace period)."""
        self.process.stop()

    def kill(self) -> None:
        """Hard crash: SIGKILL, no controlled shutdown."""
        self.process.kill()

    def pause(self) -> None:
        self.process.pause()

    def resume(self) -> None:
        self.process.resume()

    def restart(self) -> None:
        """Stop (if running) and start again with its data kept."""
        self.stop()
        self.start()

    def wipe(self) -> None:
        """Stop and delete all data, then format afresh (same cluster id)."""
        self.kill()
        shutil.rmtree(self.data_dir, ignore_errors=True)
        self.format_storage()

    @property
    def running(self) -> bool:
        return self.process.running

    def _java_argv(self, main_class: str, *args: str) -> list[str]:
        s = self.settings
        return [
            s.java, f"-Xms{min(256, s.heap_mb)}m", f"-Xmx{s.heap_mb}m",
            "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:+ExitOnOutOfMemoryError",
            "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={LOG4J_CONFIG}",
            f"-Dkafka.logs.dir={self.workdir}",
            "-cp", ":".join(str(p) for p in s.classpath), main_class, *args,
        ]
