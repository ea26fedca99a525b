"""The proxy server against a scripted broker on loopback: frames pumped, responses rewritten, errors logged.

The Kafka-facing behaviour is shown against real brokers in tests/integration/test_kafka_proxy.py;
this shows what a real cluster cannot be made to do on demand: answer with a broker the proxy
has no port for (a broker added after the drill started).
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import struct

from mirrordrill.harness.lab.network.kafka_proxy import KafkaProxyProcess, KafkaProxySpec, ProxyListener
from mirrordrill.harness.lab.network.kafka_proxy.server import KafkaProxyServer
from mirrordrill.primitives.ports import LOOPBACK, PortAllocator


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def metadata_v1_response(corr: int, brokers: list[tuple[int, str, int]]) -> bytes:
    out = struct.pack(">ii", corr, len(brokers))
    for node, host, port in brokers:
        out += struct.pack(">ih", node, len(host)) + host.encode() + struct.pack(">ih", port, -1)  # rack: null
    return out + struct.pack(">ii", 1, 0)  # controller id, no topics


async def scripted_broker(brokers: list[tuple[int, str, int]]) -> asyncio.base_events.Server:
    """Answers every request with a Metadata v1 response naming ``brokers``, under the request's correlation id."""
    async def serve(reader, writer):
        while True:
            try:
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                request = await reader.readexactly(size)
            except asyncio.IncompleteReadError:
                break
            corr = struct.unpack_from(">i", request, 4)[0]
            writer.write(frame(metadata_v1_response(corr, brokers)))
            await writer.drain()
        writer.close()
    return await asyncio.start_server(serve, LOOPBACK, 0)


async def ask_metadata(port: int, corr: int) -> bytes:
    reader, writer = await asyncio.open_connection(LOOPBACK, port)
    writer.write(frame(struct.pack(">hhih", 3, 1, corr, 1) + b"c"))  # Metadata v1, client id "c"
    await writer.drain()
    size = struct.unpack(">i", await reader.readexactly(4))[0]
    body = await reader.readexactly(size)
    writer.close()
    return body


def test_responses_are_rewritten_and_an_unknown_broker_is_logged_once(caplog):
    async def scenario():
        broker = await scripted_broker([(1, "real-broker", 9092), (7, "added-later", 9093)])
        broker_port = broker.sockets[0].getsockname()[1]
        listen = PortAllocator().take()
        spec = KafkaProxySpec(name="t", upstream={1: f"{LOOPBACK}:{broker_port}"},
                              listeners=[ProxyListener(listen_port=listen, node_id=1, location="local")],
                              advertised={"local": {1: 45678}})
        server = KafkaProxyServer(spec)
        await server.start()
        try:
            first = await ask_metadata(listen, 11)
            second = await ask_metadata(listen, 12)  # the proxy is still up after the unknown broker
        finally:
            await server.close()
            broker.close()
            await asyncio.sleep(0.2)  # the scripted broker sees the proxy's connection end
        return first, second

    with caplog.at_level(logging.ERROR, logger="kafka_proxy"):
        first, second = asyncio.run(scenario())
    assert first == metadata_v1_response(11, [(1, "127.0.0.1", 45678), (7, "added-later", 9093)])
    assert second == metadata_v1_response(12, [(1, "127.0.0.1", 45678), (7, "added-later", 9093)])
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "broker 7" in errors[0] and "Rerun the drill" in errors[0]


def test_the_spec_file_is_private(tmp_path):
    spec = KafkaProxySpec(name="p", upstream={1: "b:9092"},
                          listeners=[ProxyListener(listen_port=40000, node_id=1, location="local")],
                          advertised={"local": {1: 40000}})
    proxy = KafkaProxyProcess(spec, tmp_path / "work", spec_dir=tmp_path / "secret")
    assert stat.S_IMODE(os.stat(proxy.spec_path).st_mode) == 0o600
    assert KafkaProxySpec.from_json(proxy.spec_path.read_text()) == spec
    assert proxy.process.infrastructure and not proxy.process.running
