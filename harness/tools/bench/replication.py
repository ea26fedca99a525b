"""Replicators side by side: ``python -m mirrordrill.harness.tools.bench.replication``.

One two-cluster environment (``src`` and ``dst``, one broker each, a WAN link without
toxics); for each replicator in turn, on a fresh topic of its own (``--partitions``
partitions, records of ``--size`` bytes), the replicator placed at the target as usual:

1. **throughput**: a backlog of ``--records`` records is produced on ``src`` before the
   replicator starts (``loadgen.backlog``, as fast as librdkafka batches allow); the clock runs
   from the replicator being *ready* until every record is on ``dst`` (sum of the remote
   topic's end offsets, polled every 0.1 s). Records already copied when it became ready
   (it may start copying while its readiness check is still running) are left out of the
   rate and reported separately, as is the start-up time.
2. **latency**: with the replicator caught up, the backlog is deleted from the remote topic
   (so the Observer does not read it; rows below the backlog's offsets are also filtered),
   the Observer reads the remote topic, and a Locust load process (``LoadRunner``)
   produces ``--rate`` records/s for ``--seconds`` s. The reference checker gives
   p50/p99/max replication latency (first seen on ``dst`` minus send time), lost and
   duplicated records.

Every replicator gets ``tasks.max`` = ``--tasks`` (PySpark: its number of streams, which
sizes its micro-batch task slots; MirrorMaker 2: its source tasks). The machine load
(``os.getloadavg()``) is written at each phase, with the replicator's CPU seconds during
the backlog: on a shared machine the figures are noisy and only comparable within one run.
Prints a table and writes ``bench.json`` to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mirrordrill.primitives.cpu import tree_cpu_seconds
from mirrordrill.primitives.measurement_record import Sitting, add_record_option

MB = 1_000_000  # SI megabytes, as the checker's throughput_mb_s

REPLICATORS: dict[str, tuple[str, dict[str, Any]]] = {
    # name on the command line -> (adapter kind, adapter options)
    "pyspark-microbatch": ("pyspark", {"mode": "microbatch"}),
    "pyspark-realtime": ("pyspark", {"mode": "realtime"}),
    "mirrormaker2": ("mirrormaker2", {}),
}
DEFAULT_REPLICATORS = tuple(REPLICATORS)


# ======================================================================================
# Results (plain data, written to bench.json)
# ======================================================================================
@dataclass
class LoadMark:
    """The machine's load averages when a phase began or ended."""

    phase: str
    at_s: float  # seconds since the benchmark started
    load1: float
    load5: float
    load15: float


@dataclass
class BenchResult:
    """What one replicator did; None where a phase did not run (see ``error``)."""

    replicator: str
    topic: str = ""
    remote_topic: str = ""
    backlog_records: int = 0
    backlog_produce_s: float | None = None
    startup_s: float | None = None           # start() called -> ready
    at_ready: int | None = None               # records already on dst when ready
    backlog_s: float | None = None            # ready -> every backlog record on dst
    backlog_target_records: int | None = None  # on dst when done (> records: duplicates)
    records_s: float | None = None
    mb_s: float | None = None
    cpu_s: float | None = None                # replicator process tree, ready -> done
    latency_acked: int | None = None
    latency_replicated: int | None = None
    latency_count: int | None = None
    p50_ms: int | None = None
    p90_ms: int | None = None
    p99_ms: int | None = None
    max_ms: int | None = None
    lost: int | None = None
    duplicates: int | None = None
    reordered: int | None = None
    corrupted: int | None = None
    unexpected: int | None = None
    load_achieved_rate: float | None = None
    catch_up_s: float | None = None           # end of latency load -> everything on dst
    load: list[LoadMark] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str | None = None


# ======================================================================================
# Pure helpers (unit-tested)
# ======================================================================================
def parse_replicators(text: str) -> list[str]:
    """``a,b,c`` -> names, each known, none twice."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise ValueError("no replicator named")
    for n in names:
        if n not in REPLICATORS:
            raise ValueError(f"unknown replicator {n!r}; valid: {', '.join(REPLICATORS)}")
    if len(set(names)) != len(names):
        raise ValueError(f"a replicator is listed twice: {names}")
    return names


def backlog_rate(records: int, size_bytes: int, seconds: float) -> tuple[float | None, float | None]:
    """(records/s, MB/s) of ``records`` values of ``size_bytes`` in ``seconds``; None for no time."""
    if seconds <= 0 or records <= 0:
        return None, None
    return records / seconds, records * size_bytes / seconds / MB


def after_boundaries(rows: Iterable[Any], boundaries: Mapping[tuple[str, int], int]) -> list[Any]:
    """Rows (with ``topic``, ``partition``, ``offset``) at or above their partition's boundary.

    The backlog occupies each remote partition's offsets below its boundary; what the
    latency phase measures starts there. A partition without a boundary keeps every row.
    """
    return [r for r in rows if r.offset >= boundaries.get((r.topic, r.partition), 0)]


def _fmt(value: float | int | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def render_table(results: Sequence[BenchResult]) -> str:
    """The side-by-side table, then each replicator's load averages per phase."""
    head = (f"{'replicator':<20} {'start s':>7} {'backlog rec/s':>13} {'MB/s':>6} {'at ready':>8} "
            f"{'cpu s':>6} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} {'lost':>5} {'dup':>5}")
    lines = [head, "-" * len(head)]
    for r in results:
        lines.append(
            f"{r.replicator:<20} {_fmt(r.startup_s, '.1f'):>7} {_fmt(r.records_s, ',.0f'):>13} "
            f"{_fmt(r.mb_s, '.1f'):>6} {_fmt(r.at_ready, 'd'):>8} {_fmt(r.cpu_s, '.0f'):>6} "
            f"{_fmt(r.p50_ms, 'd'):>7} {_fmt(r.p99_ms, 'd'):>7} {_fmt(r.max_ms, 'd'):>7} "
            f"{_fmt(r.lost, 'd'):>5} {_fmt(r.duplicates, 'd'):>5}")
    lines.append("")
    lines.append("load averages (1/5/15 min) at each phase:")
    for r in results:
        lines.append(f"  {r.replicator}:")
        for m in r.load:
            lines.append(f"    {m.at_s:7.0f}s  {m.phase:<28} {m.load1:5.2f} {m.load5:5.2f} {m.load15:5.2f}")
        if r.error:
            lines.append(f"    ERROR: {r.error}")
        for n in r.notes:
            lines.append(f"    note: {n}")
    return "\n".join(lines)


# ======================================================================================
# Measuring
# ======================================================================================
class Clock:
    """Seconds since the benchmark began, and load-average marks."""

    def __init__(self, log: Callable[[str], None]) -> None:
        self.t0 = time.monotonic()
        self.log = log

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def mark(self, phase: str, into: list[LoadMark] | None = None) -> LoadMark:
        l1, l5, l15 = os.getloadavg()
        m = LoadMark(phase, round(self.elapsed(), 1), round(l1, 2), round(l5, 2), round(l15, 2))
        if into is not None:
            into.append(m)
        self.log(f"{phase} (load {l1:.2f} {l5:.2f} {l15:.2f})")
        return m


class Offsets:
    """End offsets of one topic on one cluster (a long-lived admin client)."""

    def __init__(self, cluster, topic: str, partitions: int) -> None:
        self.admin = cluster.admin()
        self.topic = topic
        self.partitions = partitions

    def ends(self, timeout_s: float = 10.0) -> dict[tuple[str, int], int] | None:
        """Per partition; None while the topic (or one of its partitions) does not exist."""
        from confluent_kafka import KafkaException, TopicPartition
        from confluent_kafka.admin import OffsetSpec

        request = {TopicPartition(self.topic, p): OffsetSpec.latest() for p in range(self.partitions)}
        try:
            futures = self.admin.list_offsets(request, request_timeout=timeout_s)
            return {(tp.topic, tp.partition): f.result(timeout=timeout_s + 5).offset for tp, f in futures.items()}
        except KafkaException:
            return None

    def total(self) -> int:
        ends = self.ends()
        return sum(ends.values()) if ends else 0

    def delete_below(self, ends: Mapping[tuple[str, int], int], timeout_s: float = 30.0) -> None:
        from confluent_kafka import TopicPartition

        futures = self.admin.delete_records([TopicPartition(t, p, off) for (t, p), off in ends.items()],
                                            request_timeout=timeout_s, operation_timeout=timeout_s)
        for f in futures.values():
            f.result(timeout=timeout_s + 5)


def wait_until(condition: Callable[[], bool], timeout_s: float, interval_s: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval_s)
    return condition()


# ======================================================================================
# One replicator
# ======================================================================================
def bench_one(env, artifacts, name: str, args, out: Path, clock: Clock) -> BenchResult:
    from mirrordrill.harness.drill.replicators import make_replicator
    from mirrordrill.harness.drill.replicators.setup import FlowSpec, ReplicationSetup

    kind, options = REPLICATORS[name]
    topic = f"bench-{name}-{secrets.token_hex(3)}"
    res = BenchResult(replicator=name, topic=topic, backlog_records=args.records)
    src, dst = env.cluster("src"), env.cluster("dst")
    source = Offsets(src, topic, args.partitions)
    backlog_ends = _produce_backlog(src, source, name, args, out, clock, res)

    setup = ReplicationSetup(env=env, flows=[FlowSpec("src", "dst", topics=[topic],
                                                      settings={"tasks.max": args.tasks})],
                             workdir=env.workdir / "replicators" / name)
    res.remote_topic = remote = setup.remote_topic("src", topic)
    replicator = make_replicator(kind, setup, artifacts=artifacts, **options)
    target = Offsets(dst, remote, args.partitions)
    clock.log(f"{name}: starting (logs: {', '.join(str(p) for p in replicator.log_paths().values())})")
    clock.mark(f"{name}: starting", res.load)
    t_start = time.monotonic()
    with replicator:
        if not _measure_backlog(replicator, target, t_start, name, args, clock, res):
            return res  # no latency phase: a lagging replicator would skew it
        latency = _measure_latency(env, source, target, backlog_ends, name, args, out, clock, res)
    _check_latency(latency, res)
    clock.mark(f"{name}: stopped and checked", res.load)
    return res


def _produce_backlog(src, source: Offsets, name: str, args, out: Path, clock: Clock,
                     res: BenchResult) -> dict[tuple[str, int], int]:
    """Phase 1's backlog on a fresh topic of ``src``; returns its end offsets."""
    from confluent_kafka.admin import NewTopic

    from mirrordrill.loadgen.backlog import produce_backlog

    src.create_topics([NewTopic(source.topic, args.partitions, 1)])
    clock.mark(f"{name}: producing backlog", res.load)
    # the drills' backlog writer: enveloped records and their ledger, under out/backlog/<name>
    backlog = produce_backlog("src", src.bootstrap, source.topic, args.records, args.size, out / "backlog" / name)
    res.backlog_produce_s = round(backlog.seconds, 2)
    backlog_ends = source.ends() or {}
    if sum(backlog_ends.values()) != args.records:
        raise RuntimeError(f"backlog on {source.topic}: {sum(backlog_ends.values())} records on src, "
                           f"expected {args.records}")
    clock.log(f"{name}: backlog of {args.records} records produced in {res.backlog_produce_s:.1f}s")
    return backlog_ends


def _measure_backlog(replicator, target: Offsets, t_start: float, name: str, args, clock: Clock,
                     res: BenchResult) -> bool:
    """Phase 1's clock, from the replicator ready to the backlog on ``dst``; False when it ran out."""
    t_ready = time.monotonic()
    res.at_ready = target.total()
    cpu0 = tree_cpu_seconds(p.pid for p in replicator.processes)
    res.startup_s = round(t_ready - t_start, 1)
    clock.mark(f"{name}: ready ({res.at_ready} on dst)", res.load)

    done = wait_until(lambda: target.total() >= args.records, args.backlog_timeout)
    t_done = time.monotonic()
    cpu1 = tree_cpu_seconds(p.pid for p in replicator.processes)
    res.backlog_target_records = target.total()
    clock.mark(f"{name}: backlog replicated" if done else f"{name}: backlog TIMEOUT", res.load)
    copied = (args.records if done else res.backlog_target_records) - res.at_ready
    rate, mb = backlog_rate(copied, args.size, t_done - t_ready)
    res.records_s = round(rate, 1) if rate is not None else None
    res.mb_s = round(mb, 2) if mb is not None else None
    if not done:  # the rate so far
        res.error = (f"backlog not replicated within {args.backlog_timeout:.0f}s: "
                     f"{res.backlog_target_records}/{args.records} on dst (rate: partial); "
                     "latency not measured")
        return False
    res.backlog_s = round(t_done - t_ready, 2)
    res.cpu_s = round(cpu1 - cpu0, 1)
    if res.backlog_target_records > args.records:
        res.notes.append(f"{res.backlog_target_records - args.records} backlog duplicates on dst")
    if res.at_ready:
        res.notes.append(f"{res.at_ready} backlog records were on dst before the replicator was ready "
                         "(left out of the rate)")
    clock.log(f"{name}: backlog {args.records - res.at_ready} records in {res.backlog_s:.1f}s after ready "
              f"= {res.records_s or 0:,.0f} records/s")
    return True


@dataclass(frozen=True)
class _LatencyRun:
    """What phase 2 left to check: the load's ledgers, the Observer's file, the backlog's end on ``dst``."""

    ledgers: list[Path]
    uncertain: list[Path]
    observed: Path
    boundaries: dict[tuple[str, int], int]


def _measure_latency(env, source: Offsets, target: Offsets, backlog_ends: dict[tuple[str, int], int], name: str,
                     args, out: Path, clock: Clock, res: BenchResult) -> _LatencyRun:
    """Phase 2: the backlog deleted from ``dst``, the Observer reading it, ``--rate`` records/s for ``--seconds``."""
    from mirrordrill.loadgen.observer import Observer

    boundaries = target.ends() or {}
    try:
        target.delete_below(boundaries)  # the Observer reads from the log start
    except Exception as err:  # filtering below still keeps the figures right, only slower
        res.notes.append(f"could not delete the backlog on dst ({err}); the Observer read it")
    histories = out / "histories" / name
    observer = Observer("dst", env.cluster("dst").bootstrap, [target.topic], histories,
                        writer_tag=f"observer-{name}")
    observer.start()
    try:
        observer.drain(60)
        ledgers, uncertain = _latency_load(env, source.topic, histories, name, args, out, clock, res)
        t_end = time.monotonic()
        source_ends = source.ends() or {}

        def caught_up() -> bool:  # every latency record (counted by offsets) is on dst
            ends = target.ends()
            return ends is not None and all(
                ends.get((target.topic, p), 0) - boundaries.get((target.topic, p), 0)
                >= source_ends.get((source.topic, p), 0) - backlog_ends.get((source.topic, p), 0)
                for p in range(args.partitions))

        if wait_until(caught_up, args.drain_timeout, 0.2):
            res.catch_up_s = round(time.monotonic() - t_end, 1)
        else:
            res.notes.append(f"not caught up {args.drain_timeout:.0f}s after the latency load: "
                             "the missing records count as lost")
        observer.drain(60)
    finally:
        observer.stop(drain=False)
    return _LatencyRun(ledgers, uncertain, observer.path, boundaries)


def _latency_load(env, topic: str, histories: Path, name: str, args, out: Path, clock: Clock,
                  res: BenchResult) -> tuple[list[Path], list[Path]]:
    """The Locust load of phase 2, run to its end; its ledgers and uncertain-send files."""
    from mirrordrill.loadgen.runner import LoadRunner
    from mirrordrill.loadgen.spec import LoadSpec

    spec = LoadSpec(cluster="src", bootstrap_servers=env.cluster("src").bootstrap, topics=[topic], rate=args.rate,
                    duration_s=args.seconds, record_size={"fixed": args.size},
                    producer_id_prefix=f"bench-{name}", output_dir=histories)
    clock.mark(f"{name}: latency load starts", res.load)
    with LoadRunner(spec, out / "load" / name, name=f"load-{name}", supervisor=env.supervisor) as runner:
        runner.start()
        code = runner.wait(args.seconds + 120)
        stats = runner.stop(timeout_s=30)
        if code not in (0, None) or stats is None:
            raise RuntimeError(f"load process ended with code {code}; log {runner.log_path}")
        res.load_achieved_rate = round(stats.achieved_rate, 1)
        ledgers = [p for p in runner.ledger_paths if p.exists()]
        uncertain = [p for p in runner.uncertain_paths if p.exists()]
    clock.mark(f"{name}: latency load ended", res.load)
    return ledgers, uncertain


def _check_latency(run: _LatencyRun, res: BenchResult) -> None:
    """The reference checker's figures of phase 2, into ``res``."""
    from mirrordrill.harness.drill.checker.contract import FlowInput
    from mirrordrill.harness.drill.checker.reference import check_flow
    from mirrordrill.loadgen.histories.kinds import ACKED_SENDS, TARGET_RECORDS, UNCERTAIN_SENDS
    from mirrordrill.loadgen.histories.reader import read_rows

    remote, topic = res.remote_topic, res.topic
    observed = after_boundaries(read_rows(TARGET_RECORDS, [run.observed]), run.boundaries)
    figures = check_flow(FlowInput(source="src", target="dst", topic_map={remote: topic},
                                   acked=read_rows(ACKED_SENDS, run.ledgers), observed=observed,
                                   uncertain=read_rows(UNCERTAIN_SENDS, run.uncertain)))
    lat = figures.latency_ms
    res.latency_acked, res.latency_replicated, res.latency_count = figures.acked, figures.replicated, lat.count
    res.p50_ms, res.p90_ms, res.p99_ms, res.max_ms = lat.p50, lat.p90, lat.p99, lat.max
    res.lost, res.duplicates, res.reordered = figures.lost, figures.duplicates, figures.reordered
    res.corrupted, res.unexpected = figures.corrupted, figures.unexpected


# ======================================================================================
# The command
# ======================================================================================
def parse_args(argv: list[str] | None):
    p = argparse.ArgumentParser(prog="python -m mirrordrill.harness.tools.bench.replication", description=__doc__.splitlines()[0])
    p.add_argument("--records", type=int, default=100_000,
                   help="backlog records (default 100000: the three replicators in about 10 min on 2 busy cores)")
    p.add_argument("--rate", type=float, default=1000.0, help="latency phase records/s (default 1000)")
    p.add_argument("--seconds", type=float, default=30.0, help="latency phase length (default 30)")
    p.add_argument("--partitions", type=int, default=6)
    p.add_argument("--size", type=int, default=1024, help="record value bytes (default 1024)")
    p.add_argument("--tasks", type=int, default=6, help="tasks.max of every replicator (default 6)")
    p.add_argument("--replicators", default=",".join(DEFAULT_REPLICATORS),
                   help=f"comma-separated, run in this order (default {','.join(DEFAULT_REPLICATORS)})")
    p.add_argument("--out", help="folder for bench.json, histories and logs (default /tmp/mirrordrill/bench-<time>)")
    p.add_argument("--backlog-timeout", type=float, default=240.0, help="seconds (default 240)")
    p.add_argument("--drain-timeout", type=float, default=120.0, help="seconds (default 120)")
    p.add_argument("--keep-broker-data", action="store_true",
                   help="keep the brokers' log segments (deleted by default; logs stay)")
    add_record_option(p)
    args = p.parse_args(argv)
    try:
        args.replicators = parse_replicators(args.replicators)
    except ValueError as err:
        p.error(str(err))
    for name in ("records", "partitions", "size", "tasks"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be >= 1")
    if args.rate <= 0 or args.seconds <= 0:
        p.error("--rate and --seconds must be > 0")
    return args


def main(argv: list[str] | None = None) -> int:
    from mirrordrill.harness.lab.brokers.cluster import ClusterSpec
    from mirrordrill.harness.lab.environment import Environment, TopologySpec
    from mirrordrill.primitives.bootstrap import Bootstrap

    sitting = Sitting.begin(["python", "-m", "mirrordrill.harness.tools.bench.replication"], argv)
    args = parse_args(argv)
    out = Path(args.out or f"/tmp/mirrordrill/bench-{time.strftime('%Y%m%d-%H%M%S')}").resolve()
    out.mkdir(parents=True, exist_ok=True)
    clock = Clock(lambda m: print(f"[{time.strftime('%H:%M:%S')}] {m}", file=sys.stderr, flush=True))
    doc: dict[str, Any] = {
        "command": " ".join(["python -m mirrordrill.harness.tools.bench.replication",
                             *(argv if argv is not None else sys.argv[1:])]),
        "settings": {k: v for k, v in vars(args).items()},
        "machine": {"cpus": os.cpu_count()},
        "topology": "src, dst: one broker each; WAN link src<->dst without toxics; replicators placed at dst",
        "caveat": "shared machine: figures are noisy and comparable only within one run; see load averages",
        "results": [],
    }
    results: list[BenchResult] = []

    def write() -> None:
        doc["results"] = [asdict(r) for r in results]
        doc["elapsed_s"] = round(clock.elapsed(), 1)
        (out / "bench.json").write_text(json.dumps(doc, indent=2, default=str) + "\n")

    start_marks: list[LoadMark] = []
    clock.mark("starting", start_marks)
    artifacts = Bootstrap().ensure_all(with_allure=False)
    spec = TopologySpec(clusters=(ClusterSpec("src"), ClusterSpec("dst")))
    env = Environment(spec, out / "env", artifacts, log=clock.log, keep_broker_data=args.keep_broker_data)
    interrupted = False
    try:
        with env:
            doc["links"] = [link.describe() for link in env.links.values()]
            clock.mark(f"environment up in {env.startup.total_s:.0f}s", start_marks)
            doc["environment_load"] = [asdict(m) for m in start_marks]
            for name in args.replicators:
                try:
                    results.append(bench_one(env, artifacts, name, args, out, clock))
                except KeyboardInterrupt:
                    raise
                except Exception as err:  # the next replicator still runs
                    results.append(BenchResult(replicator=name, error=f"{type(err).__name__}: {err}"))
                    clock.log(f"{name}: FAILED: {err}")
                write()
    except KeyboardInterrupt:
        interrupted = True
        clock.log("interrupted: everything started has been stopped")
    finally:
        clock.mark("done", start_marks)
        doc["environment_load"] = [asdict(m) for m in start_marks]
        write()

    print()
    print(f"{args.records} backlog records of {args.size} B on {args.partitions} partitions; latency at "
          f"{args.rate:g} records/s for {args.seconds:g}s; tasks.max {args.tasks}; {os.cpu_count()} CPUs")
    print(render_table(results))
    print()
    print("backlog rec/s, MB/s: from replicator ready until all records on dst (records on dst at ready left "
          "out);\n  cpu s: replicator process tree CPU in that time; latency: first seen on dst minus send.")
    print("The machine is shared: figures are noisy and only comparable within one run (see load averages).")
    print(f"bench.json: {out / 'bench.json'}")
    if args.record:
        print(f"record: {sitting.write('bench-replication', doc, args.record)}")
    return 130 if interrupted else (1 if any(r.error for r in results) else 0)


if __name__ == "__main__":
    sys.exit(main())
