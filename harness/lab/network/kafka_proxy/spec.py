"""What one Kafka-protocol proxy does: which ports it listens on, where each forwards, what it advertises.

A proxy sits in front of one cluster the drill does not own. Each listener stands for one
(broker, location) pair: it forwards to that broker and, in every response, rewrites the
addresses of all brokers to the ports the clients of that location must use (``local``: the
proxy's own listeners; a remote cluster's name: the Toxiproxy ports that lead to them), so a
client never learns an address that goes around the proxy.

TLS material is given as paths to PEM files (as in ``primitives.kafka.security``), never as
the keys themselves; the spec file is still written 0600 since it names them.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, model_validator

LOCAL = "local"


class ProxyListener(BaseModel):
    """One port the proxy listens on (127.0.0.1): forwards to broker ``node_id``, rewrites for ``location``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    listen_port: int
    node_id: int
    location: str  # "local" or the name of the remote cluster whose clients come in here


class UpstreamTls(BaseModel):
    """How the proxy connects to the real brokers over TLS (paths to PEM files)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ca_pem: str | None = None  # None: the system's trust store
    cert_pem: str | None = None  # a client certificate, for brokers that require mutual TLS
    key_pem: str | None = None
    key_password_file: str | None = None  # a file holding the key's password, if the key is encrypted
    verify_hostname: bool = True

    @model_validator(mode="after")
    def _pairs(self) -> UpstreamTls:
        if (self.cert_pem is None) != (self.key_pem is None):
            raise ValueError("upstream_tls: cert_pem and key_pem go together (a client certificate needs its key)")
        if self.key_password_file and not self.key_pem:
            raise ValueError("upstream_tls: key_password_file is given but there is no key_pem it unlocks")
        return self


class DownstreamTls(BaseModel):
    """The proxy's own certificate for 127.0.0.1 (clients trust the drill's CA that signed it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cert_pem: str
    key_pem: str


class KafkaProxySpec(BaseModel):
    """One proxy in front of one cluster; ``validate`` runs at construction and on JSON load."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    upstream: dict[int, str]  # node id -> "host:port" the real broker advertises
    listeners: list[ProxyListener]
    advertised: dict[str, dict[int, int]]  # location -> node id -> port on 127.0.0.1 its clients are told
    upstream_tls: UpstreamTls | None = None
    downstream_tls: DownstreamTls | None = None
    # The run-time guard (``guard``): with a prefix, writes to names the drill does not own are
    # refused and each refusal is appended to ``refusals_file`` (JSON lines) for the drill engine.
    owned_prefix: str | None = None
    refusals_file: str | None = None
    # Topics whose creation is refused without being reported: MirrorMaker 2's heartbeat connector
    # creates 'heartbeats' at start even with emission off, and goes on when it may not.
    quiet_topics: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _consistent(self) -> KafkaProxySpec:
        problems = self.problems()
        if problems:
            raise ValueError(f"kafka proxy {self.name!r}: " + "; ".join(problems))
        return self

    def problems(self) -> list[str]:
        out: list[str] = []
        if not self.listeners:
            out.append("no listeners: give one ProxyListener per (broker, location)")
        for node, address in self.upstream.items():
            host, sep, port_text = address.rpartition(":")
            if not sep or not host or not port_text.isdigit():
                out.append(f"upstream of node {node} is {address!r}: write it as host:port")
        ports = [listener.listen_port for listener in self.listeners]
        for port in sorted({p for p in ports if ports.count(p) > 1}):
            out.append(f"listen port {port} is used by more than one listener: give each its own port")
        seen: set[tuple[int, str]] = set()
        for listener in self.listeners:
            where = f"listener on port {listener.listen_port}"
            if listener.node_id not in self.upstream:
                out.append(f"{where} forwards to node {listener.node_id}, which has no upstream address: "
                           f"add it to upstream (known nodes: {sorted(self.upstream)})")
            if listener.location not in self.advertised:
                out.append(f"{where} serves location {listener.location!r}, which has no advertised map: "
                           f"add advertised[{listener.location!r}] (locations: {sorted(self.advertised)})")
            if (listener.node_id, listener.location) in seen:
                out.append(f"node {listener.node_id} has two listeners for location {listener.location!r}")
            seen.add((listener.node_id, listener.location))
        if (self.owned_prefix is None) != (self.refusals_file is None):
            out.append("owned_prefix and refusals_file go together: a guard records every refusal it makes")
        for location, ports_by_node in self.advertised.items():
            missing = sorted(set(self.upstream) - set(ports_by_node))
            if missing:
                out.append(f"advertised[{location!r}] has no port for node(s) {missing}: clients of "
                           f"{location!r} would be told the real broker's address and go around the proxy")
            for node, port in ports_by_node.items():
                if not 0 < port < 65536:
                    out.append(f"advertised[{location!r}][{node}] = {port} is not a TCP port")
        return out

    def upstream_address(self, node_id: int) -> tuple[str, int]:
        host, _, port = self.upstream[node_id].rpartition(":")
        return host.strip("[]"), int(port)

    def to_json(self) -> str:
        return self.model_dump_json(indent=2)

    @classmethod
    def from_json(cls, text: str) -> KafkaProxySpec:
        return cls.model_validate_json(text)
