"""The lab's services, rendered from the same broker objects the process backend runs.

A drill's broker container mounts the broker's own folder at the same path, so its
``server.properties``, its data and ``broker.log`` are where the process backend puts them,
and the configuration (listeners, quorum, paths) is the one ``KafkaBroker.properties`` writes.
A self-contained lab (``docker-compose.chaos.yml``) instead carries each configuration inline
and keeps data in a named volume.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass

from mirrordrill.harness.lab.brokers.broker import KafkaBroker
from mirrordrill.harness.lab.compose.spec import Mount, Service
from mirrordrill.harness.lab.network.wan import ProxyRoute
from mirrordrill.primitives.ports import LOOPBACK


@dataclass(frozen=True)
class BrokerImage:
    """The broker image's contract (docs/containers.md): its tag, its java, its Kafka jars, its log4j2 (stdout)."""

    ref: str
    java: str
    classpath: str  # a JVM wildcard such as /opt/mirrordrill/kafka/libs/*
    log4j: str


def broker_service_name(broker: KafkaBroker) -> str:
    return f"broker-{broker.settings.cluster_name}-{broker.node_id}".lower()


def _argv(broker: KafkaBroker, image: BrokerImage, main: str, *args: str, logs_dir: str | None = None) -> list[str]:
    return broker.java_argv(main, *args, java=image.java, classpath=(image.classpath,), log4j=image.log4j,
                            logs_dir=logs_dir)


def broker_service(broker: KafkaBroker, image: BrokerImage) -> Service:
    """A drill's broker: formatted by the harness, its folder mounted, its output appended to broker.log."""
    run = _argv(broker, image, "kafka.Kafka", str(broker.config_path))
    command = ("sh", "-c", f"exec {shlex.join(run)} >>{shlex.quote(str(broker.log_path))} 2>&1")
    mounts: tuple[Mount, ...] = (Mount(str(broker.workdir), str(broker.workdir)),)
    if broker.settings.security is not None:
        # A secure broker's properties, key material and data live in the drill's secret folder (deleted at
        # the end), not in its own folder: mounted at the same path, only into that cluster's brokers.
        secret = str(broker.settings.security.secrets.path)
        mounts += (Mount(secret, secret),)
    return Service(broker_service_name(broker), image.ref, command, role="broker", mounts=mounts, stop_grace_s=20)


def lab_broker_service(broker: KafkaBroker, image: BrokerImage, config_name: str) -> Service:
    """A self-contained lab's broker: formats its volume at first start, configuration inline, output to ``docker logs``."""
    name = broker_service_name(broker)
    conf = f"/etc/mirrordrill/{name}.properties"
    fmt = _argv(broker, image, *broker.format_args(conf), logs_dir="/tmp")
    run = _argv(broker, image, "kafka.Kafka", conf, logs_dir="/tmp")
    command = ("sh", "-c", f"{shlex.join(fmt)} && exec {shlex.join(run)}")
    mounts = (Mount(f"{name}-data", str(broker.data_dir), volume=True),)
    return Service(name, image.ref, command, role="broker", mounts=mounts, configs=((config_name, conf),),
                   stop_grace_s=20)


def toxiproxy_service(image: str, port: int, config_path: str | None = None, config_name: str | None = None) -> Service:
    """The Toxiproxy server (the image's entrypoint is the binary); with a config, its proxies exist from the start."""
    command: tuple[str, ...] = ("-host", LOOPBACK, "-port", str(port), "-proxy-metrics")  # WAN byte counters
    configs: tuple[tuple[str, str], ...] = ()
    if config_path and config_name:
        command += ("-config", config_path)
        configs = ((config_name, config_path),)
    return Service("toxiproxy", image, command, role="toxiproxy", configs=configs, stop_grace_s=5)


def toxiproxy_config(routes: list[ProxyRoute]) -> str:
    """Toxiproxy's ``-config`` file: the proxies of every link, clean (toxics are added through its API)."""
    return json.dumps([{"name": r.name, "listen": f"{LOOPBACK}:{r.listen_port}", "upstream": r.upstream,
                        "enabled": True} for r in routes], indent=2) + "\n"
