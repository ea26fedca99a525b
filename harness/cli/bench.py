"""``mirrordrill bench startup``: the command line of the lab start-up benchmark (harness/tools/bench/startup.py)."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

from harness.cli.exit_codes import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from primitives.measurement_record import Sitting


def cmd_bench_startup(args) -> int:
    """Every drill's lab (or --drills) started and stopped on both backends alternately; medians side by side."""
    from harness.drill.validate import ScenarioInvalid
    from harness.tools.bench.startup import bench_startup
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
