"""WAN bytes per link and direction, from Toxiproxy's per-proxy counters."""

from __future__ import annotations

from types import SimpleNamespace

from mirrordrill.harness.lab.network.toxiproxy import ToxiproxyClient
from mirrordrill.harness.lab.network.wan import ProxyRoute, WanLink

# what toxiproxy-server -proxy-metrics serves (labels in any order, values as Prometheus floats)
METRICS = """\
# HELP toxiproxy_proxy_received_bytes_total Bytes received by the proxy
# TYPE toxiproxy_proxy_received_bytes_total counter
toxiproxy_proxy_received_bytes_total{direction="upstream",listener="127.0.0.1:4001",proxy="wan_dr_to_primary_b0",upstream="127.0.0.1:9092"} 52000
toxiproxy_proxy_received_bytes_total{direction="downstream",listener="127.0.0.1:4001",proxy="wan_dr_to_primary_b0",upstream="127.0.0.1:9092"} 1.1e+06
toxiproxy_proxy_received_bytes_total{proxy="wan_primary_to_dr_b0",direction="downstream",listener="127.0.0.1:4002",upstream="127.0.0.1:9093"} 700
toxiproxy_proxy_sent_bytes_total{direction="downstream",listener="127.0.0.1:4001",proxy="wan_dr_to_primary_b0",upstream="127.0.0.1:9092"} 1.1e+06
"""


def test_received_bytes_reads_each_proxys_counters_by_direction(monkeypatch):
    client = ToxiproxyClient("127.0.0.1", 8474)
    monkeypatch.setattr(client, "_call", lambda method, path, what: SimpleNamespace(text=METRICS))
    assert client.received_bytes() == {"wan_dr_to_primary_b0": {"upstream": 52000, "downstream": 1_100_000},
                                       "wan_primary_to_dr_b0": {"downstream": 700}}


def test_a_link_counts_what_its_proxies_carried_each_way():
    routes = [ProxyRoute("wan_dr_to_primary_b0", "dr", "primary", 4001, "127.0.0.1:9092"),
              ProxyRoute("wan_primary_to_dr_b0", "primary", "dr", 4002, "127.0.0.1:9093")]
    link = WanLink("primary", "dr", routes, client=None)
    received = {"wan_dr_to_primary_b0": {"upstream": 52000, "downstream": 1_100_000},
                "wan_primary_to_dr_b0": {"downstream": 700}}
    # a replicator at dr fetching from primary: the records flow downstream of dr's proxy to primary
    assert link.bytes_carried(received) == {"primary->dr": 1_100_000 + 0, "dr->primary": 52000 + 700}
