"""``mirrordrill load-worker``: a distributed load's worker, for a team to start on other machines."""

from __future__ import annotations

import argparse
import os
import sys


def cmd_load_worker(args: argparse.Namespace) -> int:
    # Replaced by the worker process itself: Locust patches its process with gevent, which must
    # never reach this one's imports, and signals then reach the worker directly.
    argv = [sys.executable, "-m", "mirrordrill.loadgen.load_worker", "--master", args.master, "--dir", args.dir,
            "--log-level", args.log_level] + (["--once"] if args.once else [])
    os.execv(sys.executable, argv)


def add_parsers(sub: argparse._SubParsersAction) -> None:  # argparse exposes no public type for it
    s = sub.add_parser("load-worker", help="join a drill's load master (load.remote_workers) from this machine and "
                                           "produce its share; its ledger goes back to the master over Locust's "
                                           "channel (no shared filesystem)")
    s.add_argument("--master", required=True, metavar="HOST:PORT",
                   help="where the drill's load master listens (load.master_bind, load.master_port)")
    s.add_argument("--dir", default="mirrordrill-load-worker", metavar="DIR",
                   help="this worker's own ledger, stats and log go here (default: ./mirrordrill-load-worker)")
    s.add_argument("--once", action="store_true",
                   help="exit after one load run (default: serve the next run too, e.g. after a failover, "
                        "until Ctrl-C)")
    s.add_argument("--log-level", default="INFO")
    s.set_defaults(func=cmd_load_worker)
