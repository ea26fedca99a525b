"""Command-line options several subcommands share (run, sweep, calibrate, bench): where Spark runs, the
drill's profile, where brokers run, flight recordings."""

from __future__ import annotations

import argparse


def spark_master_type(value: str) -> str:
    """argparse's type for ``--spark-master``: a master the Spark deployment accepts, else a usage error."""
    from mirrordrill.harness.lab.spark.deployment import SparkDeployment, SparkDeploymentError
    try:
        SparkDeployment(master=value)
    except SparkDeploymentError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return value


def profile_option(s: argparse.ArgumentParser) -> None:
    from mirrordrill.harness.drill.profile import PROFILES
    s.add_argument("--profile", choices=PROFILES, default="full",
                   help="full (default): the file as written; short: load duration, timeline 'at's and backlogs "
                        "scaled (x 0.5 unless the file's profiles.short.scale says), same faults in the same "
                        "order, with the file's profiles.short limits (what the test suite runs)")


def backend_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", choices=["processes", "docker"], default="processes",
                        help="where brokers and Toxiproxy run: local processes (default) or containers of a Compose "
                             "project (docker; the replicator and the load stay local processes)")


def trace_arg(s: argparse.ArgumentParser) -> None:
    s.add_argument("--trace", action="store_true",
                   help="trace each record's send to the target and its acknowledgement in the bundled replicator, "
                        "and give each flow in summary.json a tail_trace: which step of the path its slowest 1%% "
                        "waited in (docs/explanations/figures.md, \"Where the tail waited\")")


def jfr_arg(s: argparse.ArgumentParser) -> None:
    s.add_argument("--jfr", action="store_true",
                   help="record a Java flight recording of each replicator JVM (ours on a local master, MirrorMaker 2): "
                        "flight.jfr in each replicator node's folder, and flight-summary.json ranking where its "
                        "threads spent their samples (docs/tutorials/sizing.md, \"Where the replicator's time goes\")")
