"""``mirrordrill bench startup`` and ``bench load``: the command lines of the lab start-up and load benchmarks
(harness/tools/bench/startup.py, harness/tools/bench/load.py)."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

from mirrordrill.harness.cli.exit_codes import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from mirrordrill.primitives.measurement_record import Sitting


def cmd_bench_startup(args) -> int:
    """Every drill's lab (or --drills) started and stopped on both backends alternately; medians side by side."""
    from mirrordrill.harness.drill.validate import ScenarioInvalid
    from mirrordrill.harness.tools.bench.startup import bench_startup
    files = [Path(f) for f in args.drills] if args.drills else sorted(Path("scenarios").glob("*.yaml"))
    if not files:
        print("mirrordrill bench: no drill files (run from the repository root or pass --drills)", file=sys.stderr)
        return EXIT_USAGE
    out = Path(args.out) if args.out else Path("runs") / f"bench-startup-{datetime.now():%Y%m%d-%H%M%S}"
    sitting = Sitting.begin(["mirrordrill"])

    def log(m: str) -> None:
        print(f"mirrordrill bench: {m}", file=sys.stderr, flush=True)

    try:
        result = bench_startup(files, args.runs, out, log=log)
    except (ValueError, ScenarioInvalid) as e:
        print(f"mirrordrill bench: {e}", file=sys.stderr)
        return EXIT_USAGE
    js, md = result.save()
    print(result.markdown())
    print(f"\nsaved: {md} and {js}")
    if args.record:
        print(f"record: {sitting.write('bench-startup', result.to_json(), args.record)}")
    return EXIT_FAILED if any(s.error for s in result.samples) else EXIT_OK


def add_load_options(parser) -> None:
    """``bench load``'s own options, on the bench subcommand's parser."""
    parser.add_argument("--sizes", default="100,1024,10240", metavar="B,B,...",
                        help="load: record sizes in bytes (default 100,1024,10240)")
    parser.add_argument("--seconds", type=float, default=3.0, help="load: seconds of each load run (default 3)")
    parser.add_argument("--users", type=int, default=1, help="load: Locust users in the load process (default 1)")
    parser.add_argument("--producer", action="append", default=[], metavar="K=V",
                        help="load: a producer setting of the load, e.g. linger.ms=20 (repeatable)")


def cmd_bench_load(args) -> int:
    """The highest rate one load process sustains at each record size, and with 2 workers (harness/tools/bench/load.py)."""
    import shutil
    import tempfile

    from mirrordrill.harness.tools.bench.load import LoadSettings, bench_load
    try:
        sizes = tuple(int(x) for x in args.sizes.split(",") if x.strip())
        producer = dict(kv.split("=", 1) for kv in args.producer)
        if not sizes or min(sizes) < 64 or args.seconds <= 0 or args.users < 1:
            raise ValueError("sizes of at least 64 bytes, seconds > 0 and users >= 1")
    except ValueError as e:
        print(f"mirrordrill bench: load: {e}", file=sys.stderr)
        return EXIT_USAGE
    sitting = Sitting.begin(["mirrordrill"])
    workdir = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="mirrordrill-bench-load-"))
    try:
        result = bench_load(workdir, sizes, LoadSettings(seconds=args.seconds, users=args.users, producer=producer),
                            log=lambda m: print(f"mirrordrill bench: {m}", file=sys.stderr, flush=True))
    finally:
        if not args.out:
            shutil.rmtree(workdir, ignore_errors=True)
    print("\n".join(result.lines()))
    if args.record:
        print(f"record: {sitting.write('bench-load', result.to_json(), args.record)}")
    held = [*result.sizes, *([result.two_workers] if result.two_workers else [])]
    return EXIT_OK if all(r.sustained_records_s is not None for r in held) else EXIT_FAILED
