"""``python -m mirrordrill.harness.lab.network.kafka_proxy SPEC.json [--log FILE]``: run one proxy until SIGTERM.

Prints ``READY_LINE`` (with the listen ports) once every listener is bound; exits 0 on
SIGTERM/SIGINT, and 2 with the reason on stderr when the spec is invalid or a port is taken.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from pathlib import Path

from pydantic import ValidationError

from mirrordrill.harness.lab.network.kafka_proxy.server import KafkaProxyServer
from mirrordrill.harness.lab.network.kafka_proxy.spec import KafkaProxySpec

READY_LINE = "kafka-proxy ready"


async def _run(spec: KafkaProxySpec) -> None:
    server = KafkaProxyServer(spec)
    await server.start()
    print(f"{READY_LINE}: {spec.name} on ports {[lst.listen_port for lst in spec.listeners]}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.close()
    logging.getLogger("kafka_proxy").info("%s: stopped", spec.name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mirrordrill.harness.lab.network.kafka_proxy",
                                     description="A Kafka-protocol proxy that rewrites broker addresses.")
    parser.add_argument("spec", type=Path, help="the proxy's spec (KafkaProxySpec as JSON)")
    parser.add_argument("--log", type=Path, help="log file (default: stderr)")
    parser.add_argument("--debug", action="store_true", help="log every connection open/close")
    args = parser.parse_args(argv)
    logging.basicConfig(filename=args.log, level=logging.DEBUG if args.debug else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        spec = KafkaProxySpec.from_json(args.spec.read_text())
    except (OSError, ValidationError) as e:
        print(f"kafka-proxy: cannot use the spec {args.spec}: {e}", file=sys.stderr)
        return 2
    try:
        asyncio.run(_run(spec))
    except OSError as e:
        print(f"kafka-proxy {spec.name}: cannot listen: {e} (is another process on that port?)", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
