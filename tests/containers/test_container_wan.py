"""Brokers and Toxiproxy in containers: clients through the WAN link, a latency toxic, labels."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from mirrordrill.harness.lab.network.probe import measure_round_trip
from tests.integration.kafka_helpers import new_topic, produce_values, read_values, unique_topic

from .lab import SESSION_LABEL

pytestmark = pytest.mark.integration


def test_produce_and_consume_through_the_link_with_latency(container_lab, lab_link):
    east = container_lab.cluster("east")
    through_link = east.wan_bootstrap("west")  # a west client reaching east through the proxy
    topic = unique_topic("ctr-wan")
    east.create_topics([new_topic(topic)])
    lab_link.set(latency_ms=100)
    values = [f"v{i}".encode() for i in range(50)]
    assert produce_values(through_link, topic, values) == [None] * 50
    assert read_values(through_link, topic) == values
    assert read_values(east.bootstrap, topic) == values  # the local listener sees the same log
    # Request and response each cross the link once: a round trip cannot take less than 200 ms.
    assert measure_round_trip(through_link).median_ms >= 200
    lab_link.heal()
    assert produce_values(through_link, topic, [b"after-heal"]) == [None]


def test_containers_are_on_the_host_network_and_labelled(container_lab, docker_engine, session_labels):
    ids = docker_engine.run(["ps", "-q", "--filter",
                             f"label={SESSION_LABEL}={session_labels[SESSION_LABEL]}"]).stdout.split()
    assert len(ids) == 3  # toxiproxy + one broker per cluster
    for cid in ids:
        fmt = '{{.HostConfig.NetworkMode}} {{index .Config.Labels "mirrordrill"}}'
        assert docker_engine.run(["inspect", "-f", fmt, cid]).stdout.split() == ["host", "test"]


def listening_addresses(port: int) -> set[str]:
    """Local addresses with a socket listening on ``port`` (host network: /proc/net/tcp and tcp6;
    Java listens on IPv6 sockets, where 127.0.0.1 reads as ::ffff:127.0.0.1)."""
    found = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            addr_hex, port_hex = fields[1].split(":")
            if fields[3] != "0A" or int(port_hex, 16) != port:  # 0A: LISTEN
                continue
            # The kernel prints each 32-bit word in host (little-endian) order.
            raw = b"".join(bytes.fromhex(addr_hex[i:i + 8])[::-1] for i in range(0, len(addr_hex), 8))
            addr = ipaddress.ip_address(raw)
            found.add(str(getattr(addr, "ipv4_mapped", None) or addr))
    return found


def test_every_listener_is_on_loopback_only(container_lab):
    ports = [container_lab.toxiproxy_container.api_port]
    for cluster in container_lab.clusters.values():
        for b in cluster.brokers:
            ports += [b.ports.local, b.ports.controller, *b.ports.wan.values(), *b.ports.wan_advertised.values()]
    assert {p: listening_addresses(p) for p in ports} == {p: {"127.0.0.1"} for p in ports}
