"""Capacity sweeps: run a drill once per parameter combination and find where throughput stops growing.

Each point is a full drill (real clusters, WAN link, replicator, load) with the parameters
applied to the drill file; it records replicated throughput, whether lag stayed bounded,
latency, and the CPU the replicator's processes used (from /proc, no psutil). Every point is
appended to ``sweep.jsonl`` as it finishes, so an interrupted sweep keeps what it measured.
The machine's own ceiling (Kafka's ProducerPerformance into the target, a plain consumer on
the source) is measured in the same sweep, and results read as a fraction of it.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

import yaml

# sweep keys that are not flow settings, and the flow setting a shorthand stands for
_SHORTHANDS = {"num_streams": "tasks.max", "linger.ms": "producer.linger.ms", "batch.size": "producer.batch.size"}
TARGET_UTILISATION = (0.75, 0.80)  # size for headroom: bursts and failover catch-up need it
KNEE_GAIN = 0.10  # a step that adds less than 10% throughput is past the knee


class SweepError(ValueError):
    """A sweep that cannot run (bad --param, unknown key); the message says what is valid."""


@dataclass(frozen=True)
class SweepParam:
    key: str
    values: tuple[Any, ...]


def _value(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_params(specs: list[str]) -> list[SweepParam]:
    """``["num_streams=1,2,4", "replicator=pyspark,mirrormaker2"]`` -> parameters, in order."""
    out = []
    for spec in specs:
        key, eq, values = spec.partition("=")
        vals = tuple(_value(v.strip()) for v in values.split(",") if v.strip())
        if not eq or not key.strip() or not vals:
            raise SweepError(f"--param {spec!r}: expected KEY=V1,V2,... (e.g. num_streams=1,2,4)")
        out.append(SweepParam(key.strip(), vals))
    if len({p.key for p in out}) != len(out):
        raise SweepError("each --param key may be given once")
    return out


def apply_params(drill: dict, params: dict[str, Any]) -> dict:
    """A copy of a drill file's content with one combination applied."""
    d = json.loads(json.dumps(drill))
    for key, value in params.items():
        if key == "replicator":
            if value not in ("pyspark", "mirrormaker2"):
                raise SweepError(f"replicator={value!r}: valid values are pyspark, mirrormaker2")
            d["replication"]["replicator"] = value
        elif key == "rate":
            for p in d.get("load", {}).get("producers", []):
                p["rate"] = value
        elif key == "duration":
            d["duration"] = value
        else:
            for f in d["replication"]["flows"]:
                f.setdefault("settings", {})[_SHORTHANDS.get(key, key)] = value
    return d


# --- CPU of the replicator's processes ------------------------------------------------------
def _pids_under(root: Path) -> list[int]:
    root_s = str(root.resolve())
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cwd = os.readlink(d / "cwd")
            except OSError:
                continue
            if cwd == root_s or cwd.startswith(root_s + os.sep):
                pids.append(int(d.name))
    return pids


def _cpu_seconds(pid: int) -> float | None:
    """utime + stime of one process (and its waited-for children), from /proc/<pid>/stat."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # the command name may contain spaces
    ticks = sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


class CpuMeter:
    """Samples the CPU time of every process whose working folder is under ``root``, once a second."""

    def __init__(self, root: Path):
        self.root = root
        self.latest: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> "CpuMeter":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.wait(1.0):
            if self.root.exists():
                for pid in _pids_under(self.root):
                    cpu = _cpu_seconds(pid)
                    if cpu is not None:
                        self.latest[pid] = cpu  # the last reading before a process ends counts

    @property
    def cpu_s(self) -> float:
        return sum(self.latest.values())


# --- one point ------------------------------------------------------------------------------
@dataclass
class SweepPoint:
    """What one drill at one combination measured."""

    params: dict
    run_dir: str
    passed: bool
    replicated_records_s: float | None   # replicated / (first send .. last arrival)
    sustained_records_s: float | None    # median replicated per second while load ran
    produced_records_s: float | None
    lag_bounded: bool
    final_lag: int | None
    latency_p50_ms: int | None
    latency_p99_ms: int | None
    replicator_cpu_s: float
    replicator_cpu_cores: float | None   # average cores busy while load ran
    lost: int | None
    seconds: float
    of_ceiling: float | None = None


def measure_point(run_dir: Path, params: dict, cpu_s: float, seconds: float) -> SweepPoint:
    """Figures of one finished drill, from its summary and the checker's series."""
    from reports.run_data import load_run
    run = load_run(run_dir)
    s = run.summary
    flow = run.flows[0] if run.flows else None
    f = flow.summary if flow else {}
    produced = replicated = []
    final_lag, load_s = None, None
    if flow is not None and flow.series is not None:
        produced = [v for v in flow.series.produced.values if v]
        load_start = flow.series.produced.start_s
        load_end = load_start + len(flow.series.produced.values)
        replicated = [v or 0 for sec, v in flow.series.replicated.points() if load_start <= sec < load_end]
        lag = [v for sec, v in flow.series.lag.points() if sec < load_end and v is not None]
        final_lag = lag[-1] if lag else None
        load_s = max(1, load_end - load_start)
    median = lambda xs: sorted(xs)[len(xs) // 2] if xs else None  # noqa: E731
    rate = median(produced)
    # bounded: at the end of the load the flow is at most ~5 s of production behind
    bounded = final_lag is not None and rate is not None and final_lag <= 5 * rate
    lat = f.get("latency_ms") or {}
    return SweepPoint(
        params=params, run_dir=str(run_dir), passed=bool(s.get("passed")),
        replicated_records_s=f.get("throughput_records_s"), sustained_records_s=median(replicated),
        produced_records_s=rate, lag_bounded=bounded, final_lag=final_lag,
        latency_p50_ms=lat.get("p50"), latency_p99_ms=lat.get("p99"), replicator_cpu_s=round(cpu_s, 1),
        replicator_cpu_cores=round(cpu_s / load_s, 2) if load_s else None, lost=f.get("lost"),
        seconds=round(seconds, 1))


# --- the machine's ceiling ------------------------------------------------------------------
@dataclass
class Ceiling:
    """What plain Kafka clients do on this machine: the most any replicator could reach."""

    produce_records_s: float
    consume_records_s: float
    record_size: int

    @property
    def records_s(self) -> float:
        # a replicator consumes and produces: the slower side bounds it
        return min(self.produce_records_s, self.consume_records_s)


_PERF_LINE = re.compile(r"(\d+) records sent, ([\d.]+) records/sec")


def measure_ceiling(workdir: Path, record_size: int, records: int = 200_000,
                    log: Callable[[str], None] = print) -> Ceiling:
    """ProducerPerformance into a fresh target cluster, then a plain consumer draining a source."""
    from confluent_kafka import Consumer
    from confluent_kafka.admin import NewTopic
    from harness.bootstrap import Bootstrap
    from harness.environment import Environment, TopologySpec
    from harness.kafka.cluster import ClusterSpec
    boot = Bootstrap()
    java, classpath = boot.java(), os.pathsep.join(map(str, boot.jvm_classpath("broker")))
    spec = TopologySpec(clusters=(ClusterSpec("source"), ClusterSpec("target")))
    with Environment(spec, workdir, log=log) as env:
        env.start()
        for name in ("source", "target"):
            env.cluster(name).create_topics([NewTopic("ceiling", 3, 1)])

        def perf(cluster: str) -> float:
            cmd = [java, "-Xmx512m", "-cp", classpath, "org.apache.kafka.tools.ProducerPerformance",
                   "--topic", "ceiling", "--num-records", str(records), "--record-size", str(record_size),
                   "--throughput", "-1", "--producer-props", f"bootstrap.servers={env.cluster(cluster).bootstrap}",
                   "acks=all"]
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=workdir).stdout
            lines = [m for m in _PERF_LINE.finditer(out)]
            if not lines:
                raise RuntimeError(f"ProducerPerformance printed no result: {out[-1000:]}")
            return float(lines[-1].group(2))

        produce = perf("target")
        log(f"ceiling: ProducerPerformance into the target: {produce:,.0f} records/s of {record_size} B")
        perf("source")  # fill the source for the consumer
        c = Consumer({"bootstrap.servers": env.cluster("source").bootstrap, "group.id": "mirrordrill-ceiling",
                      "auto.offset.reset": "earliest", "enable.auto.commit": False})
        c.subscribe(["ceiling"])
        n, start, deadline = 0, None, time.monotonic() + 300
        while n < records and time.monotonic() < deadline:
            for m in c.consume(10_000, timeout=1.0):
                if m.error() is None:
                    start = start or time.monotonic()
                    n += 1
        consume = n / max(1e-3, time.monotonic() - start) if start else 0.0
        c.close()
        log(f"ceiling: plain consumer on the source: {consume:,.0f} records/s")
    return Ceiling(produce, consume, record_size)


# --- the sweep ------------------------------------------------------------------------------
@dataclass
class SweepResult:
    out_dir: Path
    params: list[SweepParam]
    points: list[SweepPoint]
    ceiling: Ceiling | None
    plot: Path | None = None
    run_dirs: list[Path] = field(default_factory=list)

    def table(self) -> str:
        """A plain-text table, one line per point."""
        keys = [p.key for p in self.params]
        head = keys + ["replicated/s", "sustained/s", "of ceiling", "lag bounded", "p50 ms", "p99 ms", "cpu cores", "lost"]
        rows = [[str(pt.params.get(k)) for k in keys] + [
            _fmt(pt.replicated_records_s), _fmt(pt.sustained_records_s),
            f"{pt.of_ceiling:.0%}" if pt.of_ceiling is not None else "–", "yes" if pt.lag_bounded else "NO",
            _fmt(pt.latency_p50_ms), _fmt(pt.latency_p99_ms), _fmt(pt.replicator_cpu_cores), _fmt(pt.lost)]
            for pt in self.points]
        widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)]
        lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths))]
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
        if self.ceiling:
            lines.append(f"machine ceiling: produce {self.ceiling.produce_records_s:,.0f}/s, consume "
                         f"{self.ceiling.consume_records_s:,.0f}/s of {self.ceiling.record_size} B records")
        return "\n".join(lines)

    def recommendation(self) -> str:
        """Per line of the plot, the knee of the first swept parameter and a size at 75–80% utilisation."""
        if not self.points:
            return "no point finished: nothing to recommend"
        swept, others = self.params[0].key, [p.key for p in self.params[1:]]
        out = []
        for label, pts in _lines(self.points, swept, others).items():
            knee = find_knee([(pt.params[swept], pt.replicated_records_s or 0) for pt in pts])
            best = max(pt.replicated_records_s or 0 for pt in pts)
            lo, hi = (best * u for u in TARGET_UTILISATION)
            out.append(f"{label or 'all'}: throughput stops growing at {swept}={knee} (~{best:,.0f} records/s); "
                       f"plan for a peak of {lo:,.0f}-{hi:,.0f} records/s per flow at that setting "
                       f"(75-80% utilisation leaves room for bursts and failover catch-up)")
        return "\n".join(out)


def _fmt(v) -> str:
    return "–" if v is None else (f"{v:,.1f}" if isinstance(v, float) else str(v))


def _lines(points: list[SweepPoint], swept: str, others: list[str]) -> dict[str, list[SweepPoint]]:
    out: dict[str, list[SweepPoint]] = {}
    for pt in points:
        out.setdefault(", ".join(f"{k}={pt.params[k]}" for k in others), []).append(pt)
    for pts in out.values():
        pts.sort(key=lambda p: p.params[swept] if isinstance(p.params[swept], (int, float)) else str(p.params[swept]))
    return out


def find_knee(points: list[tuple[Any, float]]) -> Any:
    """The first setting after which one more step adds less than ``KNEE_GAIN`` throughput."""
    pts = sorted(points, key=lambda p: p[0] if isinstance(p[0], (int, float)) else str(p[0]))
    for (x, y), (_, y_next) in zip(pts, pts[1:]):
        if y <= 0 or (y_next - y) / y < KNEE_GAIN:
            return x
    return pts[-1][0] if pts else None


class Sweep:
    """Runs the grid, one drill at a time, printing progress and appending each point to sweep.jsonl."""

    def __init__(self, drill_file: Path, params: list[SweepParam], out_dir: Path | None = None,
                 measure_ceiling: bool = True, log: Callable[[str], None] | None = None):
        from harness.scenario.validate import load_scenario
        self.drill_file = Path(drill_file)
        load_scenario(self.drill_file)  # fail before anything starts
        self.drill = yaml.safe_load(self.drill_file.read_text())
        self.params = params
        name = self.drill.get("name", self.drill_file.stem)
        self.out_dir = Path(out_dir or Path("runs") / f"sweep-{name}-{datetime.now():%Y%m%d-%H%M%S}").resolve()
        self.measure_ceiling = measure_ceiling
        self.log = log or (lambda m: print(f"mirrordrill sweep: {m}", file=sys.stderr, flush=True))
        for combo in self.combinations():
            apply_params(self.drill, combo)  # unknown replicator names fail here, not an hour in

    def combinations(self) -> list[dict]:
        return [dict(zip([p.key for p in self.params], vals))
                for vals in itertools.product(*(p.values for p in self.params))]

    def run(self) -> SweepResult:
        from harness.scenario.engine import Drill
        from harness.scenario.validate import load_scenario
        self.out_dir.mkdir(parents=True, exist_ok=True)
        jsonl = self.out_dir / "sweep.jsonl"
        done = {json.dumps(r["params"], sort_keys=True): r for r in _read_jsonl(jsonl) if "params" in r}
        combos = self.combinations()
        points, run_dirs = [], []
        started = time.monotonic()
        try:
            for i, combo in enumerate(combos, 1):
                slug = "-".join(f"{k}={v}" for k, v in combo.items()).replace("/", "_")
                run_dir = self.out_dir / "points" / f"{i:02d}-{slug}"
                key = json.dumps(combo, sort_keys=True)
                if key in done:  # a resumed sweep keeps what it measured
                    points.append(SweepPoint(**{k: v for k, v in done[key].items() if k in SweepPoint.__dataclass_fields__}))
                    run_dirs.append(run_dir)
                    self.log(f"[{i}/{len(combos)}] {slug}: already measured")
                    continue
                eta = ""
                if points:
                    per = (time.monotonic() - started) / len(points)
                    eta = f", ~{per * (len(combos) - i + 1) / 60:.0f} min left"
                self.log(f"[{i}/{len(combos)}] {slug}: running the drill{eta}")
                run_dir.mkdir(parents=True, exist_ok=True)
                scenario_file = run_dir.parent / f"{run_dir.name}.yaml"
                scenario_file.write_text(yaml.safe_dump(apply_params(self.drill, combo), sort_keys=False))
                t0 = time.monotonic()
                with CpuMeter(run_dir / "replicator") as cpu:
                    Drill(load_scenario(scenario_file), scenario_file, run_dir, log=self.log).run()
                point = measure_point(run_dir, combo, cpu.cpu_s, time.monotonic() - t0)
                with jsonl.open("a") as f:
                    f.write(json.dumps(asdict(point)) + "\n")
                points.append(point)
                run_dirs.append(run_dir)
                self.log(f"[{i}/{len(combos)}] {slug}: {_fmt(point.replicated_records_s)} records/s replicated, "
                         f"lag {'bounded' if point.lag_bounded else 'GROWING'}, p99 {point.latency_p99_ms} ms, "
                         f"{point.replicator_cpu_cores} cores")
            ceiling = None
            if self.measure_ceiling:
                self.log("measuring this machine's ceiling (ProducerPerformance and a plain consumer)")
                ceiling = measure_ceiling(self.out_dir / "ceiling", _record_size(self.drill), log=self.log)
                with jsonl.open("a") as f:
                    f.write(json.dumps({"ceiling": asdict(ceiling)}) + "\n")
        except KeyboardInterrupt:
            self.log(f"interrupted: {len(points)} point(s) kept in {jsonl}")
            raise
        for pt in points:
            if ceiling and pt.replicated_records_s:
                pt.of_ceiling = pt.replicated_records_s / ceiling.records_s
        result = SweepResult(self.out_dir, self.params, points, ceiling, run_dirs=run_dirs)
        result.plot = self._plot(result)
        (self.out_dir / "sweep.txt").write_text(result.table() + "\n\n" + result.recommendation() + "\n")
        return result

    def _plot(self, result: SweepResult) -> Path | None:
        if not result.points:
            return None
        from reports.plots import sweep_plot
        swept = self.params[0].key
        rows = [asdict(p) for p in result.points]
        png = self.out_dir / "sweep-throughput.png"
        png.write_bytes(sweep_plot(rows, swept, "replicated_records_s", [p.key for p in self.params[1:]],
                                   "replicated records/s"))
        return png


def _record_size(drill: dict) -> int:
    for p in drill.get("load", {}).get("producers", []):
        size = (p.get("record_size") or {}).get("fixed")
        if size:
            return int(size)
    return 1024


def _read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line torn by Ctrl-C
    return out
