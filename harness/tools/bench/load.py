"""How much one load process can produce: ``python -m harness.tools.bench.load``.

Starts a one-broker cluster with ``harness.lab.environment.Environment``, then
1. measures the ledger writer alone (HistoryWriter(ACKED_SENDS) rows/s, flushed per batch as the
   producer does);
2. runs one load process unthrottled to find its ceiling, then at a fraction of that
   ceiling to check it holds: the highest rate held within 5 % is the max sustained rate.
Figures depend on the machine and on what else runs on it (the broker shares the cores).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka.admin import NewTopic

from harness.lab.brokers.cluster import ClusterSpec
from harness.lab.environment import Environment, TopologySpec
from loadgen.histories.kinds import ACKED_SENDS
from loadgen.histories.records import AckedSend
from loadgen.histories.writer import HistoryWriter
from loadgen.runner import LoadRunner
from loadgen.spec import LoadSpec, LoadStats
from primitives.cpu import waited_children_cpu_seconds
from primitives.measurement_record import Sitting, add_record_option

UNTHROTTLED = 1_000_000.0


def ledger_rate(path: Path, rows: int = 200_000, batch: int = 500) -> float:
    """Rows/s through HistoryWriter(ACKED_SENDS), flushed to the OS every ``batch`` rows."""
    writer = HistoryWriter(ACKED_SENDS, path)
    started = time.perf_counter()
    for i in range(rows):
        writer.write(AckedSend("bench", "bench-topic", i % 6, i, "load-0a1b2c3d-u0", i,
                               1_700_000_000_000 + i, 1_700_000_000_005 + i, 1024, 123456789))
        if i % batch == batch - 1:
            writer.flush()
    writer.close()
    return rows / (time.perf_counter() - started)


def run_load(bootstrap: str, topic: str, workdir: Path, rate: float, args) -> tuple[LoadStats, float]:
    """One load process for ``args.seconds``; its stats and the CPU seconds it used."""
    spec = LoadSpec(cluster="bench", bootstrap_servers=bootstrap, topics=[topic], rate=rate,
                    duration_s=args.seconds, users=args.users,
                    record_size={"fixed": args.size}, output_dir="histories",
                    flush_timeout_s=30, producer=dict(kv.split("=", 1) for kv in args.producer))
    runner = LoadRunner(spec, workdir, name=f"bench-{int(rate)}")
    cpu0 = waited_children_cpu_seconds()
    try:
        runner.start()
        code = runner.wait(args.seconds + 90)
        if code != 0:
            raise SystemExit(f"load process failed (exit {code}); see {runner.log_path}")
    finally:
        runner.stop()
    stats, cpu_s = runner.stats(), waited_children_cpu_seconds() - cpu0
    if stats is None:
        raise SystemExit(f"load process wrote no stats; see {runner.log_path}")
    return stats, cpu_s


def describe(label: str, s: LoadStats, cpu_s: float) -> str:
    per_k = cpu_s / s.acked * 1000 if s.acked else float("nan")
    return (f"{label:<22} target {s.target_rate:>9.0f}/s  acked {s.achieved_rate:>9.0f}/s  "
            f"sent {s.send_rate:>9.0f}/s  p50 {s.ack_latency_ms.p50:>5.0f} ms  "
            f"p99 {s.ack_latency_ms.p99:>5.0f} ms  cpu {cpu_s:5.1f}s ({per_k:.2f}s/1k rec)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m harness.tools.bench.load", description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=1024, help="record value bytes (default 1024)")
    p.add_argument("--seconds", type=float, default=8.0, help="length of each load run")
    p.add_argument("--users", type=int, default=1, help="Locust users in the load process")
    p.add_argument("--partitions", type=int, default=6)
    p.add_argument("--producer", nargs="*", default=[], metavar="K=V",
                   help="extra producer settings, e.g. linger.ms=20")
    p.add_argument("--workdir", help="keep files here (default: a temporary folder, removed)")
    add_record_option(p)
    sitting = Sitting.begin(["python", "-m", "harness.tools.bench.load"], argv)
    args = p.parse_args(argv)

    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="mirrordrill-bench-"))
    try:
        rows_s = ledger_rate(workdir / "ledger-bench.csv")
        print(f"ledger writer (HistoryWriter(ACKED_SENDS), flush every 500 rows): {rows_s:,.0f} rows/s")
        spec = TopologySpec(clusters=(ClusterSpec("bench"),))
        with Environment(spec, workdir / "env", log=lambda m: print(f"  {m}")) as env:
            cluster = env.cluster("bench")
            cluster.create_topics([NewTopic("bench", args.partitions, 1)])
            ceiling, cpu = run_load(cluster.bootstrap, "bench", workdir / "load", UNTHROTTLED, args)
            print(describe("unthrottled", ceiling, cpu))
            runs = [{"label": "unthrottled", "cpu_s": cpu, "stats": ceiling.model_dump()}]
            best: LoadStats | None = None
            target = ceiling.achieved_rate * 0.9
            for _ in range(4):
                stats, cpu = run_load(cluster.bootstrap, "bench", workdir / "load", target, args)
                held = stats.achieved_rate >= 0.95 * target and stats.failed == 0
                print(describe("held" if held else "not held", stats, cpu))
                runs.append({"label": "held" if held else "not held", "cpu_s": cpu, "stats": stats.model_dump()})
                if held:
                    best = stats
                    break
                target *= 0.85
        print()
        print(f"record size {args.size} B, {args.users} user(s), {args.partitions} partitions, "
              f"acks=all, idempotence on")
        if best is not None:
            print(f"max sustained rate of one load process: {best.achieved_rate:,.0f} records/s "
                  f"({best.achieved_rate * args.size / 1e6:.1f} MB/s); "
                  f"ledger rows/s in the load process: {best.achieved_rate:,.0f}")
        else:
            print("no sustained rate found (the machine is too busy?)")
        print(f"ledger writer alone: {rows_s:,.0f} rows/s")
        if args.record:
            figures = {"settings": {k: v for k, v in vars(args).items() if k != "record"}, "ledger_rows_s": rows_s,
                       "runs": runs, "max_sustained_records_s": None if best is None else best.achieved_rate}
            print(f"record: {sitting.write('bench-load', figures, args.record)}")
        return 0 if best is not None else 1
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
