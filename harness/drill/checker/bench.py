"""Benchmark: ``python -m mirrordrill.harness.drill.checker.bench --records N``.

Generates an N-record flow with every kind of fault, writes it as history files to a
temporary directory, runs the reference and the Spark checker over the files, checks that
they agree with each other and with the injected faults, and prints records verified per
second for each (file reading included; Spark start-up not), by wall clock and by CPU
time: on a shared machine the CPU figure is the steadier one. Figures, not a test.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mirrordrill.harness.drill.checker.columnar import ColumnarFlowInput
from mirrordrill.harness.drill.checker.columnar import check_flow as reference_check
from mirrordrill.harness.drill.checker.synthetic import COUNTS, FaultPlan, synthesize_flow
from mirrordrill.loadgen.histories.columnar import read_frame
from mirrordrill.loadgen.histories.kinds import (
    ACKED_SENDS,
    TARGET_RECORDS,
    UNCERTAIN_SENDS,
    HistoryKind,
    history_files,
    history_path,
)
from mirrordrill.loadgen.histories.writer import HistoryWriter
from mirrordrill.primitives.cpu import process_cpu_seconds
from mirrordrill.primitives.measurement_record import Sitting, add_record_option
from mirrordrill.primitives.ports import LOOPBACK

STANDALONE = "standalone"


def _faults(records: int) -> FaultPlan:
    each = max(1, records // 2000)  # about 0.05% of records per kind of fault
    return FaultPlan(lost=each, duplicated=each, max_extra_copies=2, swapped_pairs=each,
                     misplaced=each, bad_reads=each, checksum_mismatches=each,
                     source_duplicates=each, phantoms=each, uncertain_delivered=each,
                     uncertain_undelivered=each, rereads=each)


def _write(directory: Path, kind: HistoryKind, rows, files: int) -> None:
    writers = [HistoryWriter(kind, history_path(directory, kind, f"w{n}"))
               for n in range(files)]
    for n, w in enumerate(writers):
        w.write_many(rows[n::files])
        w.close()


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; exit 1 if the implementations disagree."""
    parser = argparse.ArgumentParser(prog="python -m mirrordrill.harness.drill.checker.bench",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, required=True, help="acked records")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--no-spark", action="store_true", help="reference only")
    parser.add_argument("--spark-master", default="local[2]",
                        help="local[N], spark://HOST:PORT, or standalone: a master and --executors one-core "
                             "workers started on this machine for the run and stopped after it")
    parser.add_argument("--executors", type=_counts, default=(2,), metavar="N[,N...]",
                        help="with --spark-master standalone: executors of one core each (default 2); several "
                             "counts (1,2) check the same files once per count, each on its own fresh cluster")
    parser.add_argument("--driver-memory", default="1g")
    add_record_option(parser)
    sitting = Sitting.begin(["python", "-m", "mirrordrill.harness.drill.checker.bench"], argv)
    args = parser.parse_args(argv)
    figures: dict[str, Any] = {"records": args.records, "seed": args.seed, "partitions": args.partitions}
    code = _bench(args, figures)
    if args.record and code == 0:
        print(f"record: {sitting.write('bench-checker', figures, args.record)}")
    return code


def _counts(text: str) -> tuple[int, ...]:
    try:
        counts = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: executor counts such as 2 or 1,2") from None
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: every executor count is at least 1")
    return counts


def _bench(args: argparse.Namespace, figures: dict[str, Any]) -> int:
    """The benchmark's figures into ``figures``; 1 if an implementation disagrees with the injected faults."""
    with tempfile.TemporaryDirectory(prefix="mirrordrill-bench-") as tmp:
        directory = Path(tmp)
        t = time.perf_counter()
        synthetic = synthesize_flow(args.records, seed=args.seed, producers=4, topics=2,
                                    partitions=args.partitions, faults=_faults(args.records),
                                    lag_samples=False, shuffle=False)
        flow = synthetic.flow
        _write(directory, ACKED_SENDS, flow.acked, files=4)
        _write(directory, TARGET_RECORDS, flow.observed, files=2)
        _write(directory, UNCERTAIN_SENDS, flow.uncertain, files=1)
        print(f"generated {args.records:,} records ({len(flow.observed):,} target reads) "
              f"in {time.perf_counter() - t:.1f}s under {directory}")
        source, target, topic_map, timeline = (flow.source, flow.target, dict(flow.topic_map),
                                               flow.timeline)
        expected = synthetic.expected
        del synthetic, flow  # the reference reads its own copy from the files

        t, cpu = time.perf_counter(), time.process_time()
        acked = read_frame(ACKED_SENDS, history_files(directory, ACKED_SENDS))
        observed = read_frame(TARGET_RECORDS, history_files(directory, TARGET_RECORDS))
        uncertain = read_frame(UNCERTAIN_SENDS, history_files(directory, UNCERTAIN_SENDS))
        read_s = time.perf_counter() - t
        t = time.perf_counter()
        reference = reference_check(ColumnarFlowInput(source, target, topic_map, acked, observed,
                                                      uncertain, (), timeline))
        check_s = time.perf_counter() - t
        cpu = time.process_time() - cpu
        del acked, observed, uncertain
        wrong = [n for n in COUNTS if getattr(reference, n) != expected.total(n)]
        if wrong:
            print(f"reference disagrees with the injected faults on {wrong}")
            return 1
        total = read_s + check_s
        print(f"reference: read {read_s:.1f}s + check {check_s:.1f}s = {total:.1f}s wall, "
              f"{cpu:.1f}s CPU -> {args.records / total:,.0f} records/s verified "
              f"({args.records / cpu:,.0f} per CPU-second)")
        figures["reference"] = {"read_s": read_s, "check_s": check_s, "cpu_s": cpu, "records_s": args.records / total}
        if args.no_spark:
            return 0
        return _bench_spark(args, directory, (source, target, topic_map, timeline), reference, figures)


@contextmanager
def _spark_master(args: argparse.Namespace, directory: Path, executors: int) -> Iterator[str]:
    """The master URL to check on: as given, or a standalone master with ``executors`` one-core
    workers started here (so each executor is one core and 1 vs 2 executors is 1 vs 2 cores),
    stopped on every exit path."""
    if args.spark_master != STANDALONE:
        yield args.spark_master
        return
    from mirrordrill.harness.lab.spark.standalone import SparkStandaloneCluster, StandaloneSpec
    from mirrordrill.primitives.bootstrap import Bootstrap
    from mirrordrill.primitives.ports import PortAllocator
    with PortAllocator() as ports:
        cluster = SparkStandaloneCluster(StandaloneSpec(workers=executors, worker_cores=1, worker_memory="2g"),
                                         directory / f"spark-{executors}", ports, java=Bootstrap().java())
        try:
            print(f"spark standalone: master and {executors} worker(s) up in {cluster.start():.1f}s at {cluster.url}")
            yield cluster.url
        finally:
            for proc in reversed(cluster.processes):
                proc.stop()


def _bench_spark(args, directory, flow, reference, figures: dict[str, Any]) -> int:
    """The Spark checker over the same files, once per executor count on standalone (the figures'
    ``spark_standalone`` list), else once (``spark``); 1 unless every run agreed with the reference."""
    if args.spark_master != STANDALONE:
        with _spark_master(args, directory, 0) as master:
            figures["spark"] = _bench_on(master, 0, args, directory, flow, reference)
        return 0 if figures["spark"]["agrees"] else 1
    runs = figures["spark_standalone"] = []
    for executors in args.executors:
        with _spark_master(args, directory, executors) as master:
            runs.append(_bench_on(master, executors, args, directory, flow, reference))
    return 0 if all(run["agrees"] for run in runs) else 1


def _bench_on(master: str, executors: int, args, directory, flow, reference) -> dict[str, Any]:
    source, target, topic_map, timeline = flow
    from pyspark.sql import SparkSession

    from mirrordrill.harness.drill.checker import spark as spark_checker

    t = time.perf_counter()
    builder = (SparkSession.builder.master(master)
               .appName("mirrordrill-checker-bench")
               .config("spark.driver.memory", args.driver_memory)
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               # the driver listens (block manager, RPC) for the executors: loopback only
               .config("spark.driver.host", LOOPBACK).config("spark.driver.bindAddress", LOOPBACK))
    if master.startswith("spark://"):  # one core per executor: the executors are the scaling unit
        builder = (builder.config("spark.executor.cores", "1").config("spark.cores.max", str(executors))
                   .config("spark.executor.memory", "1g"))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    print(f"spark session up in {time.perf_counter() - t:.1f}s ({master}, driver memory {args.driver_memory})")
    gateway = spark.sparkContext._gateway
    if gateway is None:
        raise RuntimeError("the Spark session started without a JVM gateway")
    jvm = gateway.proc.pid  # spark-submit execs the driver JVM
    try:
        t, cpu = time.perf_counter(), (process_cpu_seconds(jvm) or 0.0) + time.process_time()
        inp = spark_checker.load_flow_input(spark, directory, source, target, topic_map,
                                            timeline)
        on_spark = spark_checker.check_flow(inp)
        spark_s = time.perf_counter() - t
        cpu = (process_cpu_seconds(jvm) or 0.0) + time.process_time() - cpu
    finally:
        spark.stop()
    agree = on_spark == reference
    counted = "driver JVM + Python" + (", not the executors'" if master.startswith("spark://") else "")
    label = f"spark, {executors} executor(s):" if executors else "spark:    "
    print(f"{label} {spark_s:.1f}s wall, {cpu:.1f}s CPU ({counted}) -> "
          f"{args.records / spark_s:,.0f} records/s verified "
          f"({args.records / cpu:,.0f} per CPU-second)")
    print(f"results agree: {agree}  (lost={reference.lost}, duplicates={reference.duplicates}, "
          f"reordered={reference.reordered}, corrupted={reference.corrupted})")
    return {"master": args.spark_master, "executors": executors or None, "wall_s": spark_s, "cpu_s": cpu,
            "records_s": args.records / spark_s, "agrees": agree}


if __name__ == "__main__":
    sys.exit(main())
