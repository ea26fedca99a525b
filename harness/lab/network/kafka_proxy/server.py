"""The proxy's event loop: one asyncio server per listener, two frame pumps per connection.

Each accepted connection gets its own connection to the listener's broker. Requests go to the
broker verbatim; for the few APIs whose responses name brokers (``wire.REWRITTEN_APIS``) the
request's correlation id is remembered with its api and version, and the matching response is
rewritten for the listener's location. Everything else is copied as it comes.

With an owned prefix in the spec, every request first passes the guard (``guard``): a write to a
name the drill does not own is not forwarded; the client gets the API's authorization error
(``answers``), or its connection is closed where no answer is built, and the refusal is logged
and appended to the spec's refusals file, which the drill engine reads. The answer waits until
the broker has answered every earlier request of that connection, since clients expect their
responses in request order.

SASL needs nothing special: SaslHandshake v1 and SaslAuthenticate are ordinary framed requests,
so credentials go to the broker, which accepts or refuses them. SaslHandshake v0 (after which
the tokens travel without request headers) is not supported; clients have used v1 since Kafka 1.0.
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
import struct
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from mirrordrill.harness.lab.network.kafka_proxy import answers, guard, wire
from mirrordrill.harness.lab.network.kafka_proxy.spec import KafkaProxySpec, ProxyListener, UpstreamTls

LOOPBACK = "127.0.0.1"
MAX_FRAME = 256 * 1024 * 1024  # far above any broker's message.max.bytes; a bigger size is garbage
CONNECT_TIMEOUT_S = 15.0
ORDER_TIMEOUT_S = 60.0  # how long a refusal's answer waits for the broker's earlier answers

log = logging.getLogger("kafka_proxy")


def upstream_context(tls: UpstreamTls) -> ssl.SSLContext:
    """A client TLS context that verifies the broker with ``tls.ca_pem`` (system CAs when None)."""
    ctx = ssl.create_default_context(cafile=tls.ca_pem)
    ctx.check_hostname = tls.verify_hostname
    if tls.cert_pem:
        password = Path(tls.key_password_file).read_text().strip() if tls.key_password_file else None
        ctx.load_cert_chain(tls.cert_pem, tls.key_pem, password=password)
    return ctx


def downstream_context(cert_pem: str, key_pem: str) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert_pem, key_pem)
    return ctx


async def read_frame(reader: asyncio.StreamReader) -> bytes | None:
    """One size-prefixed frame, or None at a clean end of stream."""
    try:
        head = await reader.readexactly(4)
    except asyncio.IncompleteReadError as e:
        if e.partial:
            raise
        return None
    size = struct.unpack(">i", head)[0]
    if not 0 <= size <= MAX_FRAME:
        raise wire.WireError(f"frame size {size} is not a Kafka frame (is the client speaking TLS to a "
                             f"plaintext listener, or the other way round?)")
    return await reader.readexactly(size)


@dataclass
class _Connection:
    """One client connection and its broker connection."""

    listener: ProxyListener
    peer: str
    pending: dict[int, tuple[int, int]] = field(default_factory=dict)  # correlation id -> (api, version)
    outstanding: int = 0  # requests forwarded whose response has not come back (counted when guarded)
    idle: asyncio.Event = field(default_factory=asyncio.Event)


class RefusedConnection(ConnectionError):
    """The guard closed a connection whose refused request has no answer of ours."""


class KafkaProxyServer:
    """Serves every listener of ``spec`` until ``close``."""

    def __init__(self, spec: KafkaProxySpec):
        self.spec = spec
        self._servers: list[asyncio.base_events.Server] = []
        self._upstream_ssl = upstream_context(spec.upstream_tls) if spec.upstream_tls else None
        tls = spec.downstream_tls
        self._downstream_ssl = downstream_context(tls.cert_pem, tls.key_pem) if tls else None
        self._maps = {loc: wire.AddressMap(LOOPBACK, ports) for loc, ports in spec.advertised.items()}
        self._warned: set[int] = set()
        self._owner = guard.Owner(spec.owned_prefix) if spec.owned_prefix else None
        self._caps = guard.GUARDED_MAX_VERSION if self._owner else None
        self._recorded: set[tuple[str, str, str, str]] = set()
        self._connections: set[asyncio.Task] = set()

    async def start(self) -> None:
        """Bind every listener (all or none: a port taken by another process fails the start)."""
        try:
            for listener in self.spec.listeners:
                server = await asyncio.start_server(
                    partial(self._serve, listener), LOOPBACK, listener.listen_port,
                    ssl=self._downstream_ssl, reuse_address=True)
                self._servers.append(server)
        except OSError:
            await self.close()
            raise

    async def close(self) -> None:
        """Stop listening and close every open connection (Server.close leaves them open before 3.13)."""
        for server in self._servers:
            server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        for server in self._servers:
            await server.wait_closed()
        self._servers.clear()

    async def _serve(self, listener: ProxyListener, client_r: asyncio.StreamReader,
                     client_w: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None  # asyncio runs each connection's callback as a task of its own
        self._connections.add(task)
        try:
            await self._proxy(listener, client_r, client_w)
        except asyncio.CancelledError:
            pass  # close() ends it; re-raising would make asyncio log the cancelled callback as an error
        finally:
            client_w.close()  # idempotent; covers a cancel while the broker connection was being opened
            self._connections.discard(task)

    async def _proxy(self, listener: ProxyListener, client_r: asyncio.StreamReader,
                     client_w: asyncio.StreamWriter) -> None:
        host, port = (client_w.get_extra_info("peername") or ("?", "?"))[:2]
        peer = f"{host}:{port}"
        conn = _Connection(listener, peer)
        host, port = self.spec.upstream_address(listener.node_id)
        where = (f"{self.spec.name} port {listener.listen_port} ({listener.location}) -> "
                 f"node {listener.node_id} {host}:{port}")
        try:
            broker_r, broker_w = await asyncio.wait_for(asyncio.open_connection(
                host, port, ssl=self._upstream_ssl, server_hostname=host if self._upstream_ssl else None),
                CONNECT_TIMEOUT_S)
        except (TimeoutError, OSError, ssl.SSLError) as e:
            log.error("%s: cannot connect to the broker for client %s: %s", where, peer, e or type(e).__name__)
            client_w.close()
            return
        log.debug("%s: open for client %s", where, peer)
        pumps = [asyncio.create_task(self._requests(conn, client_r, broker_w, client_w)),
                 asyncio.create_task(self._responses(conn, broker_r, client_w))]
        try:
            done, _ = await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                problem = task.exception()
                if problem and not isinstance(problem, (ConnectionError, asyncio.IncompleteReadError)):
                    log.error("%s: client %s: %s: %s", where, peer, type(problem).__name__, problem)
        finally:
            for task in pumps:
                task.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            for writer in (client_w, broker_w):  # either side closing closes both
                writer.close()
            log.debug("%s: closed for client %s", where, peer)

    async def _requests(self, conn: _Connection, client_r: asyncio.StreamReader, broker_w: asyncio.StreamWriter,
                        client_w: asyncio.StreamWriter) -> None:
        while (frame := await read_frame(client_r)) is not None:
            header = wire.read_request_header(frame)
            if self._owner is not None:
                checked = await self._guarded(conn, header, frame, client_w)
                if checked is None:
                    continue
                frame = checked
                if guard.expects_response(header.api_key, header.api_version, frame):
                    conn.outstanding += 1
                    conn.idle.clear()
            if header.api_key in wire.REWRITTEN_APIS:
                conn.pending[header.correlation_id] = (header.api_key, header.api_version)
            broker_w.write(struct.pack(">i", len(frame)) + frame)
            await broker_w.drain()

    async def _guarded(self, conn: _Connection, header: wire.RequestHeader, frame: bytes,
                       client_w: asyncio.StreamWriter) -> bytes | None:
        """The frame to forward (Metadata may lose its auto-creation flag), or None once refused and answered."""
        owner = self._owner
        assert owner is not None
        refusal: guard.Refusal | None
        if header.api_key == guard.METADATA:
            result = guard.without_auto_creation(owner, header.api_version, frame)
            if isinstance(result, bytes):
                return result
            refusal = result
        else:
            refusal = guard.check(owner, header.api_key, header.api_version, frame)
            if refusal is None:
                return frame
        self._record(conn, refusal)
        if not guard.expects_response(header.api_key, header.api_version, frame):
            return None
        reply = answers.answer(refusal, header.correlation_id, frame, owner)
        if reply is None:
            raise RefusedConnection(f"closed after refusing {refusal.api} v{refusal.api_version}")
        if conn.outstanding:
            await asyncio.wait_for(conn.idle.wait(), ORDER_TIMEOUT_S)
        client_w.write(struct.pack(">i", len(reply)) + reply)
        await client_w.drain()
        return None

    def _record(self, conn: _Connection, refusal: guard.Refusal) -> None:
        """Log the refusal and append it to the refusals file (once per client, API and name)."""
        record = {"cluster": self.spec.name, "client": conn.peer, "api": refusal.api, "version": refusal.api_version,
                  "kind": refusal.write.kind, "name": refusal.write.name, "reason": refusal.reason,
                  "ts_ms": int(time.time() * 1000)}
        if refusal.api_key == guard.CREATE_TOPICS and refusal.write.name in self.spec.quiet_topics:
            log.info("%s", guard.describe(record) + " (expected: the client goes on without it)")
            return
        key = (conn.peer, refusal.api, refusal.write.kind, refusal.write.name)
        if key in self._recorded:
            return
        self._recorded.add(key)
        log.error("%s", guard.describe(record))
        if self.spec.refusals_file:
            with open(self.spec.refusals_file, "a", encoding="utf-8") as out:
                out.write(json.dumps(record) + "\n")

    async def _responses(self, conn: _Connection, broker_r: asyncio.StreamReader,
                         client_w: asyncio.StreamWriter) -> None:
        addresses = self._maps[conn.listener.location]
        while (frame := await read_frame(broker_r)) is not None:
            request = conn.pending.pop(wire.response_correlation_id(frame), None)
            if request is not None:
                frame = self._rewrite(request, frame, addresses)
            client_w.write(struct.pack(">i", len(frame)) + frame)
            await client_w.drain()
            if self._owner is not None:
                conn.outstanding = max(conn.outstanding - 1, 0)
                if not conn.outstanding:
                    conn.idle.set()

    def _rewrite(self, request: tuple[int, int], frame: bytes, addresses: wire.AddressMap) -> bytes:
        api_key, version = request
        result = wire.rewrite_response(api_key, version, frame, addresses, self._caps)
        for node in result.unknown_nodes:
            if node not in self._warned:  # every metadata refresh would repeat it
                self._warned.add(node)
                log.error("%s: the cluster answered with broker %d, which was not there when the drill "
                          "started, so no proxy port maps it; clients are told its real address and "
                          "bypass the proxy (and the WAN faults). Rerun the drill so it maps every broker.",
                          self.spec.name, node)
        return result.frame
