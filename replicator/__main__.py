"""``python -m mirrordrill.replicator --config FILE``: run the bundled replicator until SIGTERM or Ctrl-C."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from mirrordrill.primitives.config_errors import ConfigError
from mirrordrill.replicator.config.loading import load_config
from mirrordrill.replicator.config.settings import ReplicatorConfig
from mirrordrill.replicator.planted_faults import PlantedFaultRefused, planted_name

JARS_ENV = "MIRRORDRILL_REPLICATOR_JARS"


class NoJars(ValueError):
    """No way of finding Spark's jars was given; the message names the three ways."""


def resolve_jars(
    explicit: str | None, config: ReplicatorConfig, default: Callable[[], list[Path]] | None = None
) -> list[Path]:
    """Spark's Kafka connector and our interceptor: --jars, else the environment, else the config.

    The replicator runs without mirrordrill (it is what a user hands to spark-submit), so it
    looks nowhere else by itself; a caller that knows where jars are (``mirrordrill replicate``:
    the ones it installed) passes ``default``, asked only when none of the three is given.
    """
    spec = explicit or os.environ.get(JARS_ENV)
    if spec:
        return [Path(p) for p in spec.split(",") if p]
    if config.jars:
        return [Path(p) for p in config.jars]
    if default is not None:
        return default()
    raise NoJars(
        "no jars for Spark (spark-sql-kafka with its dependencies, and mirrordrill-replicator-jvm.jar); "
        f"give them as --jars a.jar,b.jar, in the environment variable {JARS_ENV}, or in the configuration "
        "as mirrordrill.spark.jars (YAML: jars); './mirrordrill replicate' passes the ones it installed"
    )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="replicator", description=__doc__)
    p.add_argument("--config", required=True, help="MM2 properties file or mirrordrill YAML")
    p.add_argument("--workdir", default="mirrordrill-replicator",
                   help="checkpoints, metrics.json and Spark's scratch space (default: ./mirrordrill-replicator)")
    p.add_argument("--jars", help=f"comma-separated jars for Spark (default: ${JARS_ENV}, else the configuration's "
                                   "mirrordrill.spark.jars)")
    p.add_argument("--log-level", default="INFO")
    return p


def main(argv: list[str] | None = None, default_jars: Callable[[], list[Path]] | None = None) -> int:
    """Run until SIGTERM or Ctrl-C; ``default_jars`` is asked for jars when no way gives any."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not Path(args.config).is_file():
        print(f"replicator: no configuration file at {args.config}; pass --config with an MM2 properties "
              "file or a mirrordrill replicator YAML (see replicator/examples/)", file=sys.stderr)
        return 2
    try:
        planted_name(os.environ)
    except PlantedFaultRefused as e:
        print(f"replicator: {e}", file=sys.stderr)
        return 2
    try:
        config = load_config(args.config)
    except ConfigError as e:
        print(f"replicator: {e}", file=sys.stderr)
        return 2
    try:
        jars = resolve_jars(args.jars, config, default_jars)
    except NoJars as e:
        print(f"replicator: {e}", file=sys.stderr)
        return 2
    for w in config.warnings:
        logging.getLogger("replicator").warning("%s", w)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    from mirrordrill.replicator.checkpoint_folder import CheckpointFolderRefused
    from mirrordrill.replicator.lease import LeaseLost
    from mirrordrill.replicator.process import FlowSupervisor
    from mirrordrill.replicator.prometheus import MetricsPortTaken
    try:
        FlowSupervisor(config, Path(args.workdir), jars).run(stop)
    except (MetricsPortTaken, CheckpointFolderRefused) as e:
        print(f"replicator: {e}", file=sys.stderr)
        return 2
    except LeaseLost as e:  # stopped cleanly: the standby that took over replicates; start this one again as one
        print(f"replicator: {e}", file=sys.stderr)
        return LEASE_LOST_EXIT
    return 0


# The exit status of a driver whose lease another driver took (``replicator.lease``).
LEASE_LOST_EXIT = 3


if __name__ == "__main__":
    sys.exit(main())
