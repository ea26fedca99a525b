"""``mirrordrill bench load``: the highest rate one load process sustains, per record size, and with 2 workers.

Starts a one-broker cluster with ``harness.lab.environment.Environment``, measures the ledger writer
alone (HistoryWriter(ACKED_SENDS) rows/s, flushed per batch as the producer does), then per record
size runs one load process unthrottled to find its ceiling, and again at 90% of it (then 85% less
each time) until a rate holds within 5%: that rate is the size's max sustained rate. A drill or a
sweep point asking more of one producer than that measures the load, not the replicator. The same
search then runs with the load spread over two worker processes (Locust's distributed mode, what
``load.workers: 2`` does) at 1 KB, or at the first size when 1 KB is not measured.
Figures depend on the machine and on what else runs on it (the broker shares the cores).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka.admin import NewTopic

from mirrordrill.harness.lab.brokers.cluster import ClusterSpec
from mirrordrill.harness.lab.environment import Environment, TopologySpec
from mirrordrill.loadgen.histories.kinds import ACKED_SENDS
from mirrordrill.loadgen.histories.records import AckedSend
from mirrordrill.loadgen.histories.writer import HistoryWriter
from mirrordrill.loadgen.runner import LoadRunner
from mirrordrill.loadgen.spec import LoadSpec, LoadStats
from mirrordrill.primitives.cpu import waited_children_cpu_seconds

UNTHROTTLED = 1_000_000.0
SIZES = (100, 1024, 10_240)
HELD = 0.95  # a run holds a rate when it acknowledged at least this share of it, with no failed send
FIRST_TRY, STEP_DOWN = 0.90, 0.85  # of the unthrottled ceiling, then of the rate that did not hold
WORKERS = 2  # the distributed figure: a Locust master and this many worker processes (load.workers)
TWO_WORKERS_SIZE = 1024  # its record size, when among the sizes measured (else the first of them)


@dataclass(frozen=True)
class LoadSettings:
    """What every load run of the bench uses."""

    seconds: float = 3.0
    users: int = 1
    partitions: int = 6
    attempts: int = 3  # runs below the ceiling before giving up on a size
    producer: dict[str, str] = field(default_factory=dict)


@dataclass
class SizeResult:
    """One record size: every run, and the highest rate held (None when none held)."""

    size: int
    runs: list[dict[str, Any]] = field(default_factory=list)
    sustained_records_s: float | None = None

    @property
    def unthrottled(self) -> float | None:
        """Records/s acked by the unthrottled run, its late acks counted (the ceiling the held runs start from)."""
        if not self.runs:
            return None
        return max(self.runs[0]["acked_records_s"], self.runs[0]["acked_with_drain_records_s"])

    @property
    def sustained_mb_s(self) -> float | None:
        return None if self.sustained_records_s is None else round(self.sustained_records_s * self.size / 1e6, 2)


@dataclass
class LoadBench:
    settings: LoadSettings
    ledger_rows_s: float
    sizes: list[SizeResult] = field(default_factory=list)
    two_workers: SizeResult | None = None  # the same search with the load spread over WORKERS worker processes

    def lines(self) -> list[str]:
        s = self.settings
        out = [f"one load process, {s.users} user(s), {s.partitions} partitions, acks=all, idempotence on, "
               f"{s.seconds:g} s per run" + (f", producer {s.producer}" if s.producer else ""),
               "", "| record size | max sustained records/s | MB/s | unthrottled records/s |", "|---|---|---|---|"]
        for r in self.sizes:
            top = r.unthrottled
            out.append(f"| {r.size} B | {_n(r.sustained_records_s)} | {_n(r.sustained_mb_s, 1)} | {_n(top)} |")
        w = self.two_workers
        if w is not None:
            out += ["", f"{WORKERS} workers (a Locust master and {WORKERS} worker processes on this machine, "
                        f"{s.users} user(s) each), {w.size} B: max sustained {_n(w.sustained_records_s)} records/s, "
                        f"{_n(w.sustained_mb_s, 1)} MB/s; unthrottled {_n(w.unthrottled)} records/s"]
        out += ["", f"ledger writer alone (HistoryWriter(ACKED_SENDS), flushed every 500 rows): {self.ledger_rows_s:,.0f} rows/s"]
        return out

    def to_json(self) -> dict[str, Any]:
        """A measurement record's figures."""
        return {"settings": asdict(self.settings), "ledger_rows_s": round(self.ledger_rows_s),
                "sizes": [{"record_bytes": r.size, "max_sustained_records_s": r.sustained_records_s,
                           "max_sustained_mb_s": r.sustained_mb_s, "unthrottled_records_s": r.unthrottled,
                           "runs": r.runs} for r in self.sizes],
                "two_workers": None if self.two_workers is None else {
                    "workers": WORKERS, "users_per_worker": self.settings.users, "record_bytes": self.two_workers.size,
                    "max_sustained_records_s": self.two_workers.sustained_records_s,
                    "max_sustained_mb_s": self.two_workers.sustained_mb_s,
                    "unthrottled_records_s": self.two_workers.unthrottled, "runs": self.two_workers.runs}}


def _n(v: float | None, digits: int = 0) -> str:
    return "-" if v is None else f"{v:,.{digits}f}"


def ledger_rate(path: Path, rows: int = 50_000, batch: int = 500) -> float:
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


def run_load(bootstrap: str, workdir: Path, size: int, rate: float, s: LoadSettings, workers: int = 0) -> dict[str, Any]:
    """One load process (with ``workers``: a master and its worker processes, ``s.users`` users each) for
    ``s.seconds`` at ``rate``: what it did, and the CPU seconds it used."""
    spec = LoadSpec(cluster="bench", bootstrap_servers=bootstrap, topics=["bench"], rate=rate,
                    duration_s=s.seconds, users=s.users * max(1, workers), record_size={"fixed": size},
                    output_dir="histories", flush_timeout_s=30, producer=s.producer, workers=workers)
    runner = LoadRunner(spec, workdir, name=f"bench-{size}-{int(rate)}" + (f"-{workers}w" if workers else ""))
    cpu0 = waited_children_cpu_seconds()
    try:
        runner.start()
        code = runner.wait(s.seconds + 90)
        if code != 0:
            raise RuntimeError(f"load process failed (exit {code}); see {runner.log_path}")
    finally:
        runner.stop()
    stats: LoadStats | None = runner.stats()
    if stats is None:
        raise RuntimeError(f"load process wrote no stats; see {runner.log_path}")
    return {"asked_records_s": None if rate == UNTHROTTLED else round(rate), "acked_records_s": stats.achieved_rate,
            "sent_records_s": stats.send_rate, "failed": stats.failed, "ack_p50_ms": stats.ack_latency_ms.p50,
            "ack_p99_ms": stats.ack_latency_ms.p99, "cpu_s": round(waited_children_cpu_seconds() - cpu0, 2),
            # every ack came at most the slowest ack's latency after the run: a lower bound of the rate acked
            # that counts the acks after it, which an unthrottled run's seconds-deep queue sends late
            "acked_with_drain_records_s": round(stats.acked / (stats.elapsed_s + stats.ack_latency_ms.max / 1000), 1)
            if stats.elapsed_s > 0 else 0.0}


def measure_size(bootstrap: str, workdir: Path, size: int, s: LoadSettings, log: Callable[[str], None],
                 workers: int = 0) -> SizeResult:
    """The unthrottled ceiling of one size, then the highest rate below it that holds."""
    result = SizeResult(size)
    top = run_load(bootstrap, workdir, size, UNTHROTTLED, s, workers)
    result.runs.append({"label": "unthrottled", **top})
    ceiling = result.unthrottled or 0.0
    what = f"{size} B" + (f" with {workers} workers" if workers else "")
    log(f"{what}: unthrottled {ceiling:,.0f} records/s acknowledged (ack p50 {top['ack_p50_ms']:,.0f} ms)")
    target = ceiling * FIRST_TRY
    for _ in range(s.attempts):
        if target < 1:
            break
        run = run_load(bootstrap, workdir, size, target, s, workers)
        held = run["acked_records_s"] >= HELD * target and run["failed"] == 0
        result.runs.append({"label": "held" if held else "not held", **run})
        log(f"{what}: {target:,.0f} records/s asked, {run['acked_records_s']:,.0f} acknowledged: "
            + ("held" if held else "not held"))
        if held:
            result.sustained_records_s = run["acked_records_s"]
            break
        target *= STEP_DOWN
    return result


def bench_load(workdir: Path, sizes: tuple[int, ...] = SIZES, settings: LoadSettings | None = None,
               log: Callable[[str], None] = print) -> LoadBench:
    """Every size in turn against one broker started for the bench (stopped on every way out)."""
    s = settings or LoadSettings()
    bench = LoadBench(s, ledger_rate(workdir / "ledger-bench.csv"))
    log(f"ledger writer alone: {bench.ledger_rows_s:,.0f} rows/s")
    with Environment(TopologySpec(clusters=(ClusterSpec("bench"),)), workdir / "env", log=log) as env:
        cluster = env.cluster("bench")
        cluster.create_topics([NewTopic("bench", s.partitions, 1)])
        for size in sizes:
            bench.sizes.append(measure_size(cluster.bootstrap, workdir / "load", size, s, log))
        size = TWO_WORKERS_SIZE if TWO_WORKERS_SIZE in sizes else sizes[0]
        bench.two_workers = measure_size(cluster.bootstrap, workdir / "load", size, s, log, workers=WORKERS)
    return bench
