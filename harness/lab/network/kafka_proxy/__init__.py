"""A Kafka-protocol proxy that rewrites broker addresses, so clients of a cluster the drill does
not own connect only through ports the drill controls (and Toxiproxy can cut)."""

from mirrordrill.harness.lab.network.kafka_proxy.process import KafkaProxyProcess
from mirrordrill.harness.lab.network.kafka_proxy.spec import DownstreamTls, KafkaProxySpec, ProxyListener, UpstreamTls

__all__ = ["DownstreamTls", "KafkaProxyProcess", "KafkaProxySpec", "ProxyListener", "UpstreamTls"]
