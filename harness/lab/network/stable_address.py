"""A stable client address: what a DNS name for "the Kafka cluster" is in production.

Applications bootstrap through it instead of one cluster's brokers; a failover re-points it
at the DR cluster and restarted clients find the new cluster without a configuration change.
It is one Toxiproxy proxy per broker slot, so a bootstrap list of N addresses stays valid
whatever cluster it points at (Kafka clients need only one reachable broker to learn the rest).
Only bootstrap goes through it: after the first metadata response clients talk to the
brokers' advertised addresses, as they would behind a real DNS name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mirrordrill.harness.lab.brokers.cluster import ClusterClients
from mirrordrill.harness.lab.network.toxiproxy import ToxiproxyClient
from mirrordrill.primitives.ports import LOOPBACK


@dataclass
class StableAddress:
    name: str
    ports: list[int]
    client: ToxiproxyClient
    points_to: str = ""
    history: list[str] = field(default_factory=list)  # clusters it pointed at, in order

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{LOOPBACK}:{p}" for p in self.ports)

    def proxy_name(self, slot: int) -> str:
        return f"{self.name}-{slot + 1}"

    def create(self, cluster: ClusterClients) -> None:
        for slot, port in enumerate(self.ports):
            self.client.create_proxy(self.proxy_name(slot), port, self._upstream(cluster, slot))
        self.points_to = cluster.name
        self.history.append(cluster.name)

    def point_to(self, cluster: ClusterClients) -> None:
        """Re-point every slot at ``cluster``'s brokers (slot i -> broker i, wrapping round)."""
        for slot in range(len(self.ports)):
            self.client.set_upstream(self.proxy_name(slot), self._upstream(cluster, slot))
        self.points_to = cluster.name
        self.history.append(cluster.name)

    def remove(self) -> None:
        for slot in range(len(self.ports)):
            self.client.delete_proxy(self.proxy_name(slot))

    @staticmethod
    def _upstream(cluster: ClusterClients, slot: int) -> str:
        return cluster.brokers[slot % len(cluster.brokers)].local_address
