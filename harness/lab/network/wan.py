"""WAN links between emulated data centers: Toxiproxy proxies and the conditions on them.

A link between clusters A and B is every proxy that carries traffic between them:
``B->A`` proxies (clients in B reaching A's brokers) and ``A->B`` proxies. Data flowing from A
to B travels *downstream* on the first (broker A answers a fetch from B) and *upstream* on the
second (a client in A produces to B), so a condition on one data direction is a toxic on
those two (proxy, stream) pairs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields, replace

from mirrordrill.harness.lab.network.toxiproxy import Toxic, ToxiproxyClient

# A blackhole holds data rather than dropping it (Toxiproxy's timeout toxic drops bytes,
# which corrupts the TCP stream; a real WAN blackhole retransmits). A latency toxic of one
# hour holds every chunk, and on removal Toxiproxy delivers what it held.
BLACKHOLE_HOLD_MS = 3_600_000


@dataclass(frozen=True)
class LinkConditions:
    """Conditions on one data direction of a link; the default is a clean link."""

    latency_ms: int = 0
    jitter_ms: int = 0
    bandwidth_kb_s: int | None = None
    blackhole: bool = False
    reset_after_ms: int | None = None  # connections are reset (RST) this long after data arrives
    slice_bytes: int | None = None  # split data into chunks of about this size...
    slice_variation_bytes: int = 0
    slice_delay_us: int = 0  # ...sent this far apart

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, int) and not isinstance(v, bool) and v < 0:
                raise ValueError(f"link condition {f.name} must be >= 0, got {v}")
        if self.jitter_ms > self.latency_ms and self.latency_ms:
            raise ValueError(f"jitter_ms ({self.jitter_ms}) cannot exceed latency_ms ({self.latency_ms})")
        if self.bandwidth_kb_s == 0:
            raise ValueError("bandwidth_kb_s must be > 0 (use blackhole: true to stop traffic)")

    @property
    def clean(self) -> bool:
        return self == LinkConditions()

    def toxics(self, stream: str) -> list[Toxic]:
        """The Toxiproxy toxics that make these conditions on one stream of a proxy."""
        out: list[Toxic] = []
        if self.latency_ms or self.jitter_ms:
            out.append(Toxic(f"latency_{stream}", "latency", stream,
                             {"latency": self.latency_ms, "jitter": self.jitter_ms}))
        if self.bandwidth_kb_s:
            out.append(Toxic(f"bandwidth_{stream}", "bandwidth", stream, {"rate": self.bandwidth_kb_s}))
        if self.slice_bytes:
            out.append(Toxic(f"slicer_{stream}", "slicer", stream,
                             {"average_size": self.slice_bytes, "size_variation": self.slice_variation_bytes,
                              "delay": self.slice_delay_us}))
        if self.reset_after_ms is not None:
            out.append(Toxic(f"reset_peer_{stream}", "reset_peer", stream, {"timeout": self.reset_after_ms}))
        if self.blackhole:
            out.append(Toxic(f"blackhole_{stream}", "latency", stream, {"latency": BLACKHOLE_HOLD_MS, "jitter": 0}))
        return out


@dataclass(frozen=True)
class ProxyRoute:
    """One proxy: clients in ``client_cluster`` reaching one broker of ``server_cluster``."""

    name: str
    client_cluster: str
    server_cluster: str
    listen_port: int
    upstream: str


def proxy_name(client_cluster: str, server_cluster: str, node_id: int) -> str:
    return f"wan_{client_cluster}_to_{server_cluster}_b{node_id}"


class WanLink:
    """The emulated WAN between two data centers; conditions can change while traffic flows."""

    def __init__(self, a: str, b: str, routes: Iterable[ProxyRoute], client: ToxiproxyClient):
        self.a, self.b = a, b
        self.routes = list(routes)
        self.client = client
        self.conditions: dict[tuple[str, str], LinkConditions] = {(a, b): LinkConditions(), (b, a): LinkConditions()}
        self.partitioned = False

    @property
    def name(self) -> str:
        return f"{self.a}<->{self.b}"

    def create(self) -> None:
        for r in self.routes:
            self.client.create_proxy(r.name, r.listen_port, r.upstream)

    def directions(self, direction: str | None) -> list[tuple[str, str]]:
        """Parse ``"A->B"`` (or None for both ways) into data directions of this link."""
        if direction in (None, "both", "<->"):
            return [(self.a, self.b), (self.b, self.a)]
        src, sep, dst = (direction or "").partition("->")
        pair = (src.strip(), dst.strip())
        if not sep or pair not in self.conditions:
            raise ValueError(f"direction {direction!r} is not one of '{self.a}->{self.b}', "
                             f"'{self.b}->{self.a}' or 'both' for link {self.name}")
        return [pair]

    def set(self, conditions: LinkConditions | None = None, direction: str | None = None, **changes) -> None:
        """Replace the conditions of one or both data directions (``changes`` edit the current ones)."""
        for d in self.directions(direction):
            base = conditions if conditions is not None else self.conditions[d]
            self.conditions[d] = replace(base, **changes) if changes else base
        self._apply()

    def blackhole(self, direction: str | None = None) -> None:
        """Hold all data (connections stay open) until healed."""
        self.set(direction=direction, blackhole=True)

    def partition(self) -> None:
        """Hard partition: proxies down, open connections closed, new ones refused (both ways)."""
        for r in self.routes:
            self.client.set_enabled(r.name, False)
        self.partitioned = True

    def reset_connections(self) -> None:
        """Close every open connection once (clients reconnect at once)."""
        for r in self.routes:
            self.client.set_enabled(r.name, False)
        if not self.partitioned:
            for r in self.routes:
                self.client.set_enabled(r.name, True)

    def heal(self) -> None:
        """A clean link again: proxies up, every toxic removed (held data is delivered)."""
        for d in self.conditions:
            self.conditions[d] = LinkConditions()
        self._apply()
        if self.partitioned:
            for r in self.routes:
                self.client.set_enabled(r.name, True)
            self.partitioned = False

    def bytes_carried(self, received: dict[str, dict[str, int]]) -> dict[str, int]:
        """Bytes the link carried each way ("A->B": from A's side to B's), from Toxiproxy's counters
        (``ToxiproxyClient.received_bytes``): a proxy's clients send upstream, its brokers downstream."""
        out = {f"{self.a}->{self.b}": 0, f"{self.b}->{self.a}": 0}
        for r in self.routes:
            counts = received.get(r.name, {})
            out[f"{r.client_cluster}->{r.server_cluster}"] += counts.get("upstream", 0)
            out[f"{r.server_cluster}->{r.client_cluster}"] += counts.get("downstream", 0)
        return out

    def describe(self) -> dict:
        return {
            "link": self.name,
            "partitioned": self.partitioned,
            "conditions": {f"{s}->{d}": {k: v for k, v in vars(c).items() if v not in (0, None, False)}
                           for (s, d), c in self.conditions.items()},
            "proxies": [{"name": r.name, "listen": f"127.0.0.1:{r.listen_port}", "upstream": r.upstream}
                        for r in self.routes],
        }

    def _desired(self, route: ProxyRoute) -> dict[str, Toxic]:
        # Data server->client is downstream; client->server is upstream.
        down = self.conditions[(route.server_cluster, route.client_cluster)].toxics("downstream")
        up = self.conditions[(route.client_cluster, route.server_cluster)].toxics("upstream")
        return {t.name: t for t in down + up}

    def _apply(self) -> None:
        for route in self.routes:
            want = self._desired(route)
            have = self.client.toxics(route.name)
            for name, t in have.items():
                if name not in want or want[name].type != t.get("type") or want[name].stream != t.get("stream"):
                    self.client.remove_toxic(route.name, name)
            for name, toxic in want.items():
                current = have.get(name)
                if current is None or current.get("type") != toxic.type or current.get("stream") != toxic.stream:
                    self.client.add_toxic(route.name, toxic)
                elif current.get("attributes") != toxic.attributes or current.get("toxicity") != toxic.toxicity:
                    self.client.update_toxic(route.name, toxic)
