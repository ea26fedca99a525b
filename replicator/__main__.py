"""``python -m replicator --config FILE``: run the bundled replicator until SIGTERM or Ctrl-C."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from pathlib import Path

from replicator.config import ConfigError, load_config


def resolve_jars(explicit: str | None) -> list[Path]:
    """Spark's Kafka connector and our interceptor: given, from the environment, or from mirrordrill's cache."""
    spec = explicit or os.environ.get("MIRRORDRILL_REPLICATOR_JARS")
    if spec:
        return [Path(p) for p in spec.split(",") if p]
    try:
        from primitives.bootstrap import Bootstrap
    except ImportError:
        raise SystemExit("replicator: no jars given; pass --jars (Spark's spark-sql-kafka connector and its "
                         "dependencies, plus mirrordrill-replicator-jvm.jar) or install mirrordrill") from None
    b = Bootstrap()
    return [*b.jvm_classpath("spark-kafka"), b.replicator_jar()]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="replicator", description=__doc__)
    p.add_argument("--config", required=True, help="MM2 properties file or mirrordrill YAML")
    p.add_argument("--workdir", default="mirrordrill-replicator",
                   help="checkpoints, metrics.json and Spark's scratch space (default: ./mirrordrill-replicator)")
    p.add_argument("--jars", help="comma-separated jars for Spark (default: from mirrordrill's cache)")
    p.add_argument("--log-level", default="INFO")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not Path(args.config).is_file():
        print(f"replicator: no configuration file at {args.config}; pass --config with an MM2 properties "
              "file or a mirrordrill replicator YAML (see replicator/examples/)", file=sys.stderr)
        return 2
    try:
        config = load_config(args.config)
    except ConfigError as e:
        print(f"replicator: {e}", file=sys.stderr)
        return 2
    for w in config.warnings:
        logging.getLogger("replicator").warning("%s", w)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    from replicator.app import Replicator
    Replicator(config, Path(args.workdir), resolve_jars(args.jars)).run(stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
