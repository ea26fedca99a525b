"""One Kafka broker (KRaft): its listeners, its files, its lifecycle.

Where the broker's JVM runs is its ``BrokerRunner``'s business: a local process by default
(``LocalBrokerRunner``), or a container (the docker backend, ``harness.lab.compose``). The
broker's files (server.properties, data, broker.log) live in its folder either way.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from mirrordrill.harness.lab.brokers.secure import INTERNAL_LISTENER, BrokerSecurity
from mirrordrill.harness.lab.brokers.storage_format import format_args, format_classes
from mirrordrill.primitives.jvm_archive import LazyArchive, dump_flags
from mirrordrill.primitives.jvm_jit import jit_flags
from mirrordrill.primitives.jvm_temp import temp_dir_flag
from mirrordrill.primitives.ports import LOOPBACK
from mirrordrill.primitives.process import ManagedProcess, ProcessError, child_environment
from mirrordrill.primitives.properties_syntax import format_property

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
    classpath: tuple[str | Path, ...]  # jars, or a JVM wildcard such as a container's libs/*
    heap_mb: int = 512
    properties: dict[str, str] = field(default_factory=dict)
    security: BrokerSecurity | None = None
    jit: str = "c1"  # primitives.jvm_jit; why c1: broker_jvm_options


def broker_jvm_options(heap_mb: int, jit: str, log4j: str | Path, logs_dir: str | Path) -> list[str]:
    """A broker JVM's options, for a local broker process and a broker container alike.

    ``jit`` ``c1`` by default: a drill's brokers start with the drill and live for minutes, and
    with the JVM's tiered default they compiled for C2 all through it, on cores the replicator
    and the load need: with C1 only a restart's first record moved sooner and a backlog drained
    faster for either replicator
    (see docs/measurements/behind-the-code.md#harness-lab-brokers-broker-py;
    docs/explanations/architecture.md, "The brokers' JIT").
    ``tiered`` is there for
    a long run whose brokers should reach C2's code (``broker_jit`` of a drill file's cluster)."""
    return [
        f"-Xms{min(256, heap_mb)}m", f"-Xmx{heap_mb}m", *jit_flags(jit),
        "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:+ExitOnOutOfMemoryError",
        "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={log4j}", f"-Dkafka.logs.dir={logs_dir}",
    ]


class BrokerRunner(Protocol):
    """Where a broker's JVM runs: makes its process (anything with ``ManagedProcess``'s lifecycle
    methods) and formats its storage."""

    def process(self, broker: KafkaBroker) -> ManagedProcess: ...

    def format(self, broker: KafkaBroker) -> None: ...

    def format_all(self, brokers: Sequence[KafkaBroker]) -> None:
        """``format`` for each of ``brokers`` (their configuration written), in one go where it can."""


class LocalBrokerRunner:
    """The default: each broker is a local JVM process, formatted by a local ``StorageTool`` run.

    ``archive``: the brokers' class-data archive (``harness.lab.brokers.class_archive``), mapped by
    every JVM this runner starts; ``dump_to``: where the broker processes dump one as they exit
    (the run that makes it)."""

    def __init__(self, archive: LazyArchive | None = None, dump_to: Path | None = None):
        self.archive, self.dump_to = archive, dump_to
        self._format_classes: dict[tuple[str, tuple[str | Path, ...]], Path | None] = {}

    def _archive_flags(self) -> list[str]:
        return self.archive.flags() if self.archive is not None else []

    def process(self, broker: KafkaBroker) -> ManagedProcess:
        flags = dump_flags(self.dump_to) if self.dump_to is not None else self._archive_flags()
        argv = broker.java_argv("kafka.Kafka", str(broker.config_path), jvm_flags=[*flags, temp_dir_flag(broker.workdir)])
        return ManagedProcess(name=f"kafka broker {broker.name}", argv=argv,
                              log_path=broker.log_path, cwd=broker.workdir, infrastructure=True)

    def format(self, broker: KafkaBroker) -> None:
        argv = broker.java_argv(*broker.format_args(), jvm_flags=self._archive_flags())
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=broker.workdir, env=child_environment())
        if proc.returncode != 0:
            raise ProcessError(f"formatting storage of broker {broker.name} failed:\n{proc.stdout}\n{proc.stderr}")

    def format_all(self, brokers: Sequence[KafkaBroker]) -> None:
        """One JVM formats the storage of all ``brokers`` that share a JDK and jars
        (``harness.lab.brokers.storage_format``); one StorageTool JVM each where javac is missing."""
        groups: dict[tuple[str, tuple[str | Path, ...]], list[KafkaBroker]] = {}
        for b in brokers:
            groups.setdefault((b.settings.java, b.settings.classpath), []).append(b)
        for (java, classpath), group in groups.items():
            classes = self._classes(java, classpath) if len(group) > 1 else None
            if classes is None:
                with ThreadPoolExecutor(max_workers=4) as pool:  # a short JVM run each
                    list(pool.map(self.format, group))
                continue
            first = group[0]
            argv = first.java_argv(*format_args([(b.settings.cluster_id, str(b.config_path)) for b in group]),
                                   classpath=(*classpath, classes), jvm_flags=self._archive_flags())
            proc = subprocess.run(argv, capture_output=True, text=True, cwd=first.workdir, env=child_environment())
            if proc.returncode != 0:
                names = ", ".join(b.name for b in group)
                raise ProcessError(f"formatting storage of brokers {names} failed:\n{proc.stdout}\n{proc.stderr}")

    def _classes(self, java: str, classpath: tuple[str | Path, ...]) -> Path | None:
        key = (java, classpath)
        if key not in self._format_classes:
            try:
                self._format_classes[key] = format_classes(java, classpath)
            except (OSError, RuntimeError):  # only a speed-up: one StorageTool run per broker works too
                self._format_classes[key] = None
        return self._format_classes[key]


class KafkaBroker:
    """A combined broker+controller KRaft node; its data survives restarts until ``wipe``."""

    def __init__(self, node_id: int, ports: BrokerPorts, workdir: Path, settings: BrokerSettings,
                 runner: BrokerRunner | None = None):
        self.node_id = node_id
        self.ports = ports
        self.workdir = workdir
        self.settings = settings
        # A secure broker's properties hold its private key: they live in the secret folder. So do
        # its log segments: clients store credentials in topics (MirrorMaker 2's Connect config
        # topic holds its connectors' SASL settings), and the secret folder is deleted at the end.
        sec = settings.security
        self.data_dir = sec.secrets.path / f"{settings.cluster_name}-broker-{node_id}-data" if sec else workdir / "data"
        self.config_path = (sec.secrets.path / f"{settings.cluster_name}-broker-{node_id}.properties" if sec
                            else workdir / "server.properties")
        self.log_path = workdir / "broker.log"
        self.runner = runner or LocalBrokerRunner()
        self.process = self.runner.process(self)

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
        """The broker's server.properties, listeners laid out as docs/explanations/architecture.md ("How an
        emulated data center is wired") describes."""
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

    def config_text(self) -> str:
        """server.properties as written to the broker's folder (or inlined in a Compose file)."""
        lines = [format_property(k, str(v)) for k, v in self.properties().items()]
        return "# written by mirrordrill\n" + "\n".join(lines) + "\n"

    def write_config(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        text = self.config_text()
        if self.settings.security:  # it holds the broker's private key: the secret folder, never the run folder
            self.settings.security.secrets.file(self.config_path.name, text)
        else:
            self.config_path.write_text(text)

    def format_storage(self) -> None:
        """``StorageTool format``: required once before the first start and after a wipe (many
        brokers at once: ``format_storages``)."""
        self.write_config()
        self.runner.format(self)

    def format_args(self, config_path: str | None = None) -> tuple[str, ...]:
        """StorageTool's main class and arguments (idempotent: an already formatted folder is kept)."""
        return ("kafka.tools.StorageTool", "format", "-t", self.settings.cluster_id,
                "-c", config_path or str(self.config_path), "--ignore-formatted")

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

    def java_argv(self, main_class: str, *args: str, java: str | None = None,
                  classpath: tuple[str | Path, ...] | None = None, log4j: str | Path = LOG4J_CONFIG,
                  logs_dir: str | Path | None = None, jvm_flags: list[str] | None = None) -> list[str]:
        """The JVM command line; a container passes its own java, classpath and paths, a local
        runner its class-data archive's ``jvm_flags``."""
        s = self.settings
        return [
            java or s.java, *(jvm_flags or []), *broker_jvm_options(s.heap_mb, s.jit, log4j, logs_dir or self.workdir),
            "-cp", ":".join(str(p) for p in (classpath or s.classpath)), main_class, *args,
        ]


def format_storages(brokers: Sequence[KafkaBroker]) -> None:
    """``format_storage`` for each of ``brokers``; each runner formats its brokers in one go."""
    by_runner: dict[int, tuple[BrokerRunner, list[KafkaBroker]]] = {}
    for b in brokers:
        b.write_config()
        by_runner.setdefault(id(b.runner), (b.runner, []))[1].append(b)
    for runner, group in by_runner.values():
        runner.format_all(group)
