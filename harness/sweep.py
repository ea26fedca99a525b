"""Capacity sweeps: run a drill once per parameter combination and find where throughput stops growing.

Each point is a full drill (real clusters, WAN link, replicator, load) with the parameters
applied to the drill file; it records replicated throughput, whether lag stayed bounded,
latency, and the CPU the replicator's processes used (from /proc, no psutil). Every point is
appended to ``sweep.jsonl`` as it finishes, so an interrupted sweep keeps what it measured.
The machine's own ceiling (Kafka's ProducerPerformance into the target, a plain consumer on
the source) is measured in the same sweep, and results read as a fraction of it.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import shutil
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
KNEE_GAIN = 0.10  # a setting within 10% of the best throughput is past the knee


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
        elif key == "mode":
            if value not in ("microbatch", "realtime"):
                raise SweepError(f"mode={value!r}: valid values are microbatch, realtime (pyspark's execution mode)")
            d["replication"]["mode"] = value
        elif key == "rate":
            for p in d.get("load", {}).get("producers", []):
                p["rate"] = value
        elif key == "duration":
            d["duration"] = value
        elif key == "backlog":
            for b in d.get("load", {}).get("backlog", []):
                b["records"] = value
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
    """utime + stime of one process, from /proc/<pid>/stat.

    Only the process's own time: a child's time is already counted while it runs under the
    same root, and would be counted twice through the parent's cutime/cstime once waited for.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # the command name may contain spaces
    ticks = int(fields[11]) + int(fields[12])  # utime stime (fields 14 and 15 of stat(5))
    return ticks / os.sysconf("SC_CLK_TCK")


class CpuMeter:
    """Samples the CPU time of every process whose working folder is under ``root``, once a second.

    ``samples`` are ``(epoch seconds, total CPU seconds so far)``, so the CPU of a window (the
    load, not the JVM start-up) can be read with :meth:`cpu_between`.
    """

    def __init__(self, root: Path, interval_s: float = 1.0):
        self.root = Path(root)
        self.interval_s = interval_s
        self.latest: dict[tuple[int, float], float] = {}  # (pid, start time) -> CPU seconds
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="sweep-cpu", daemon=True)

    def __enter__(self) -> "CpuMeter":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.sample()
            except Exception:  # a process vanishing mid-read; the next second reads again
                pass

    def sample(self) -> None:
        if self.root.exists():
            for pid in _pids_under(self.root):
                cpu = _cpu_seconds(pid)
                if cpu is not None:
                    # keyed with the start time, so a reused pid is a new process; the last
                    # reading before a process ends counts
                    self.latest[(pid, _start_ticks(pid))] = cpu
        self.samples.append((time.time(), self.cpu_s))

    @property
    def cpu_s(self) -> float:
        return sum(self.latest.values())

    def cpu_between(self, start_s: float, end_s: float) -> float | None:
        """CPU seconds used between two epoch times (from the samples nearest them)."""
        if not self.samples or end_s <= start_s:
            return None
        at = lambda t: min(self.samples, key=lambda s: abs(s[0] - t))  # noqa: E731
        (t0, c0), (t1, c1) = at(start_s), at(end_s)
        return c1 - c0 if t1 > t0 else None


def _start_ticks(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat[stat.rindex(")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return 0


# --- one point ------------------------------------------------------------------------------
WARMUP_S = 5  # seconds of load left out of the sustained rate: batches and connections ramp up
SATURATED_LAG = 1000  # records queued at the start of a second: the replicator had work all that second
MIN_SATURATED_S = 5  # fewer saturated seconds than this measure start-up, not a rate


@dataclass
class SweepPoint:
    """What one drill at one combination measured."""

    params: dict
    run_dir: str
    passed: bool
    replicated_records_s: float | None   # the checker's: replicated / (first send .. last arrival)
    sustained_records_s: float | None    # mean replicated per second while load ran (after warm-up)
    produced_records_s: float | None     # mean acknowledged per second while load ran: the offered rate
    lag_bounded: bool                    # the flow kept up: its capacity is at least sustained_records_s
    final_lag: int | None
    latency_p50_ms: int | None
    latency_p99_ms: int | None
    replicator_cpu_s: float              # the replicator's processes, start-up included
    replicator_cpu_cores: float | None   # average cores those processes kept busy while load ran
    lost: int | None
    seconds: float
    # mean replicated per second over the seconds the flow had work queued (a backlog, or load
    # above its capacity): its ceiling at this setting, independent of what load was offered
    saturated_records_s: float | None = None
    saturated_s: int = 0
    run: int = 1  # with --repeat, which run of this combination
    of_ceiling: float | None = None
    load_avg: tuple[float, float, float] | None = None  # os.getloadavg() when the point finished
    error: str | None = None              # a drill that failed to run: retried by a resumed sweep

    @property
    def saturated(self) -> bool:
        return self.saturated_records_s is not None and self.saturated_s >= MIN_SATURATED_S

    @property
    def capacity(self) -> float | None:
        """The throughput the sweep compares: the saturated rate when the flow was saturated long
        enough to measure it, else what it carried while load ran (a lower bound)."""
        if self.saturated:
            return self.saturated_records_s
        return self.sustained_records_s if self.sustained_records_s is not None else self.replicated_records_s

    @classmethod
    def from_json(cls, row: dict) -> "SweepPoint":
        return _from_row(cls, row)


def _from_row(cls, row: dict):
    """A dataclass from a sweep.jsonl row: unknown keys (an older or newer mirrordrill) are
    ignored, and the load average JSON stored as a list is a tuple again."""
    kw = {k: v for k, v in row.items() if k in cls.__dataclass_fields__}
    if kw.get("load_avg") is not None:
        kw["load_avg"] = tuple(kw["load_avg"])
    return cls(**kw)


def measure_point(run_dir: Path, params: dict, cpu: "CpuMeter | float", seconds: float) -> SweepPoint:
    """Figures of one finished drill, from its summary and the checker's series."""
    from reports.run_data import load_run
    run = load_run(run_dir)
    s = run.summary
    flow = run.flows[0] if run.flows else None
    f = flow.summary if flow else {}
    sustained = offered = final_lag = load_s = cores = None
    if flow is not None and flow.series is not None and flow.series.produced.values:
        series = flow.series
        load_start = series.produced.start_s
        load_end = load_start + len(series.produced.values)  # exclusive
        load_s = load_end - load_start
        skip = min(WARMUP_S, load_s // 4)
        window = range(load_start + skip, load_end)
        if len(window):
            offered = sum(series.produced.at(t) or 0 for t in window) / len(window)
            sustained = sum(series.replicated.at(t) or 0 for t in window) / len(window)
        lag = [v for sec, v in series.lag.points() if sec < load_end and v is not None]
        final_lag = lag[-1] if lag else None
        if isinstance(cpu, CpuMeter):
            used = cpu.cpu_between(load_start + skip, load_end)
            cores = round(used / (load_end - load_start - skip), 2) if used is not None and load_end - load_start > skip else None
    saturated_rate, saturated_s = (saturated_rate_of(flow.series) if flow is not None and flow.series is not None
                                   else (None, 0))
    if (yaml.safe_load(run.scenario_text or "{}") or {}).get("load", {}).get("backlog"):
        offered = None  # a backlog written up front is not a rate: the mean would mix it with start-up
    cpu_s = cpu.cpu_s if isinstance(cpu, CpuMeter) else float(cpu)
    if cores is None and load_s:
        cores = round(cpu_s / load_s, 2)
    # bounded: at the end of the load the flow is at most ~5 s of production behind
    bounded = final_lag is not None and offered is not None and final_lag <= 5 * max(offered, 1)
    if saturated_s >= MIN_SATURATED_S:
        bounded = False  # it had more work than it could do: the rate measured is its ceiling
    lat = f.get("latency_ms") or {}
    return SweepPoint(
        params=params, run_dir=str(run_dir), passed=bool(s.get("passed")),
        replicated_records_s=f.get("throughput_records_s"),
        sustained_records_s=round(sustained, 1) if sustained is not None else None,
        produced_records_s=round(offered, 1) if offered is not None else None, lag_bounded=bounded,
        final_lag=final_lag, latency_p50_ms=lat.get("p50"), latency_p99_ms=lat.get("p99"),
        replicator_cpu_s=round(cpu_s, 1), replicator_cpu_cores=cores, lost=f.get("lost"),
        seconds=round(seconds, 1), load_avg=_load_avg(), error=s.get("error"),
        saturated_records_s=saturated_rate, saturated_s=saturated_s)


def saturated_rate_of(series) -> tuple[float | None, int]:
    """Mean records/s replicated over the seconds that started with at least ``SATURATED_LAG``
    records queued, leaving out the first ``WARMUP_S`` seconds after replication began."""
    first = next((sec for sec, v in series.replicated.points() if v), None)
    if first is None:
        return None, 0
    seconds = [sec for sec, v in series.lag.points()
               if sec >= first + WARMUP_S and v is not None and (series.lag.at(sec - 1) or 0) >= SATURATED_LAG]
    if not seconds:
        return None, 0
    return round(sum(series.replicated.at(sec) or 0 for sec in seconds) / len(seconds), 1), len(seconds)


def _load_avg() -> tuple[float, float, float] | None:
    try:
        return tuple(round(x, 2) for x in os.getloadavg())
    except OSError:
        return None


# --- the machine's ceiling ------------------------------------------------------------------
@dataclass
class Ceiling:
    """What plain Kafka clients do on this machine: the most any replicator could reach."""

    produce_records_s: float
    consume_records_s: float
    record_size: int
    load_avg: tuple[float, float, float] | None = None

    @property
    def records_s(self) -> float:
        # a replicator consumes and produces: the slower side bounds it
        return min(self.produce_records_s, self.consume_records_s)

    @classmethod
    def from_json(cls, row: dict) -> "Ceiling":
        return _from_row(cls, row)


_PERF_LINE = re.compile(r"(\d+) records sent, ([\d.]+) records/sec")


def measure_ceiling(workdir: Path, record_size: int, records: int = 200_000, partitions: int = 3,
                    log: Callable[[str], None] = print, timeout_s: float = 300) -> Ceiling:
    """ProducerPerformance into a fresh target cluster, then a plain consumer draining a source.

    Both clusters are started here (the drill's are gone by then) and stopped on every exit
    path; ProducerPerformance runs from the broker jars and dies with the harness.
    """
    from confluent_kafka import Consumer
    from confluent_kafka.admin import NewTopic
    from primitives.bootstrap import Bootstrap
    from harness.environment import Environment, TopologySpec
    from harness.kafka.cluster import ClusterSpec
    from primitives.process import _die_with_parent
    boot = Bootstrap()
    java, classpath = boot.java(), os.pathsep.join(map(str, boot.jvm_classpath("broker")))
    spec = TopologySpec(clusters=(ClusterSpec("source"), ClusterSpec("target")))
    workdir = Path(workdir).resolve()
    shutil.rmtree(workdir, ignore_errors=True)  # a resumed sweep measures again on fresh clusters
    with Environment(spec, workdir, log=log) as env:  # entering starts it; leaving stops it
        for name in ("source", "target"):
            env.cluster(name).create_topics([NewTopic("ceiling", partitions, 1)])

        def perf(cluster: str) -> float:
            cmd = [java, "-Xmx512m", "-cp", classpath, "org.apache.kafka.tools.ProducerPerformance",
                   "--topic", "ceiling", "--num-records", str(records), "--record-size", str(record_size),
                   "--throughput", "-1", "--producer-props", f"bootstrap.servers={env.cluster(cluster).bootstrap}",
                   "acks=all"]
            # run() kills the tool on any exception (Ctrl-C, SIGTERM, the timeout)
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=workdir,
                                  preexec_fn=_die_with_parent)
            lines = list(_PERF_LINE.finditer(proc.stdout))
            if proc.returncode != 0 or not lines:
                raise RuntimeError(f"ProducerPerformance failed (exit {proc.returncode}): "
                                   f"{(proc.stdout + proc.stderr)[-1500:]}")
            return float(lines[-1].group(2))

        produce = perf("target")
        log(f"ceiling: ProducerPerformance into the target: {produce:,.0f} records/s of {record_size} B")
        perf("source")  # fill the source for the consumer
        c = Consumer({"bootstrap.servers": env.cluster("source").bootstrap, "group.id": "mirrordrill-ceiling",
                      "auto.offset.reset": "earliest", "enable.auto.commit": False})
        try:
            c.subscribe(["ceiling"])
            n, start, deadline = 0, None, time.monotonic() + timeout_s
            while n < records and time.monotonic() < deadline:
                for m in c.consume(10_000, timeout=1.0):
                    if m.error() is None:
                        start = start or time.monotonic()
                        n += 1
            consume = n / max(1e-3, time.monotonic() - start) if start else 0.0
        finally:
            c.close()
        log(f"ceiling: plain consumer on the source: {consume:,.0f} records/s")
    return Ceiling(round(produce, 1), round(consume, 1), record_size, _load_avg())


# --- the sweep ------------------------------------------------------------------------------
@dataclass
class SweepResult:
    out_dir: Path
    params: list[SweepParam]
    points: list[SweepPoint]
    ceiling: Ceiling | None
    ceiling_after: Ceiling | None = None  # measured again once the points ran: was the machine steady?
    started_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    plot: Path | None = None
    run_dirs: list[Path] = field(default_factory=list)
    interrupted: bool = False

    @property
    def swept(self) -> str:
        """The x axis: the first parameter whose values are all numbers (else the first)."""
        return swept_key(self.params)

    @property
    def others(self) -> list[str]:
        return [p.key for p in self.params if p.key != self.swept]

    def representative(self) -> list[SweepPoint]:
        """One point per combination: with repeated runs, the run of median capacity (the lower
        median, so every figure shown comes from one real run); failed runs only if all failed."""
        groups: dict[str, list[SweepPoint]] = {}
        for pt in self.points:
            groups.setdefault(json.dumps(pt.params, sort_keys=True), []).append(pt)
        out = []
        for runs in groups.values():
            ok = sorted((pt for pt in runs if not pt.error and pt.capacity is not None), key=lambda pt: pt.capacity)
            out.append(ok[(len(ok) - 1) // 2] if ok else runs[-1])
        return out

    def spread(self) -> list[str]:
        """Per combination run more than once: the median and the range of its capacities."""
        groups: dict[str, list[SweepPoint]] = {}
        for pt in self.points:
            if not pt.error and pt.capacity is not None:
                groups.setdefault(", ".join(f"{k}={v}" for k, v in pt.params.items()), []).append(pt)
        lines = []
        for label, runs in groups.items():
            if len(runs) > 1:
                caps = sorted(pt.capacity for pt in runs)
                lines.append(f"{label}: {len(runs)} runs, median {_fmt(caps[(len(caps) - 1) // 2])}, "
                             f"range {_fmt(caps[0])}-{_fmt(caps[-1])} records/s")
        return lines

    def table(self) -> str:
        """A plain-text table, one line per point."""
        keys = [p.key for p in self.params]
        repeated = any(pt.run > 1 for pt in self.points)
        head = keys + ["offered/s", "carried/s", "of ceiling", "lag", "p50 ms", "p99 ms", "cpu cores",
                       "not yet replicated", "load avg"]
        if repeated:
            head = head[:len(keys)] + ["run"] + head[len(keys):]
        rows = [[str(pt.params.get(k)) for k in keys] + ([str(pt.run)] if repeated else []) + (
            [_fmt(pt.produced_records_s) if pt.produced_records_s is not None else "backlog", _fmt(pt.capacity),
             f"{pt.of_ceiling:.0%}" if pt.of_ceiling is not None else "–",
             f"saturated {pt.saturated_s}s" if pt.saturated else
             "bounded" if pt.lag_bounded else f"GROWING ({_fmt(pt.final_lag)})",
             _fmt(pt.latency_p50_ms), _fmt(pt.latency_p99_ms), _fmt(pt.replicator_cpu_cores), _fmt(pt.lost),
             f"{pt.load_avg[0]:.1f}" if pt.load_avg else "–"]
            if not pt.error else [f"FAILED: {pt.error[:60]}"] + [""] * 8)
            for pt in self.points]
        widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)]
        lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip()]
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        lines.append("carried/s: when saturated (records queued all the time: a backlog or load above capacity), "
                     "the mean replicated records/s over those seconds -- the flow's ceiling at that setting; "
                     "otherwise replicated records/s while load ran, and with lag bounded its capacity is at "
                     "least that")
        if self.ceiling:
            c = self.ceiling
            lines.append(f"machine ceiling: ProducerPerformance {c.produce_records_s:,.0f}/s into the target, plain "
                         f"consumer {c.consume_records_s:,.0f}/s on the source, of {c.record_size} B records"
                         + (f" (load avg {c.load_avg[0]:.1f})" if c.load_avg else ""))
        if self.ceiling_after:
            c = self.ceiling_after
            lines.append(f"machine ceiling again after the points: {c.produce_records_s:,.0f}/s into the target, "
                         f"{c.consume_records_s:,.0f}/s from the source"
                         + (f" (load avg {c.load_avg[0]:.1f})" if c.load_avg else "")
                         + " -- a large change means the machine was busier during one of the measurements")
        spread = self.spread()
        if spread:
            lines.append("repeated combinations (the knee and the plot use each one's median run):")
            lines += [f"  {line}" for line in spread]
        if self.interrupted:
            lines.append(f"interrupted: {len(self.points)} point(s) measured; rerun the same command to finish")
        return "\n".join(lines)

    def recommendation(self) -> str:
        """Per line of the plot, the knee of the swept parameter and a size at 75–80% utilisation."""
        if not self.points:
            return "no point finished: nothing to recommend"
        swept, others = self.swept, self.others
        lo_u, hi_u = TARGET_UTILISATION
        out = []
        for label, all_pts in _lines(self.representative(), swept, others).items():
            pts = [pt for pt in all_pts if not pt.error and pt.capacity]
            if not pts:
                failed = [pt for pt in all_pts if pt.error]
                out.append(f"{label or 'all'}: nothing replicated while load ran at any {swept}"
                           + (f" ({len(failed)} point(s) failed to run)" if failed else
                              " (the replicator did not get going within the drill: start-up or its first "
                              "micro-batch took longer than the load; lengthen the drill's duration)"))
                continue
            if all(pt.lag_bounded for pt in pts):
                best = max(pts, key=lambda pt: pt.capacity)
                out.append(f"{label or 'all'}: no knee: the flow kept up with the offered load at every {swept} "
                           f"(up to {best.capacity:,.0f} records/s at {swept}={best.params[swept]}), so these are "
                           f"lower bounds of its capacity and 75-80% of them would undersize nothing; raise the "
                           f"drill's rate (or its producers' users) until lag grows")
                continue
            knee = find_knee([(pt.params[swept], pt.capacity) for pt in pts])
            at_knee = next(pt for pt in pts if pt.params[swept] == knee)
            cap = at_knee.capacity
            text = (f"{label or 'all'}: throughput stops growing at {swept}={knee} (~{cap:,.0f} records/s"
                    + (f", {at_knee.of_ceiling:.0%} of the machine ceiling" if at_knee.of_ceiling else "") + "); "
                    f"size for 75-80% utilisation: plan a peak of at most {cap * lo_u:,.0f}-{cap * hi_u:,.0f} "
                    f"records/s per flow at {swept}={knee} (room for bursts and failover catch-up)")
            if at_knee.lag_bounded:
                text += ("; the flow kept up with the offered load there, so this is a lower bound: "
                         "raise the drill's rate to find the real ceiling")
            if knee == pts[-1].params[swept] and len(pts) > 1:
                text += f"; still growing at the largest {swept}: sweep further"
            out.append(text)
        return "\n".join(out)


def _fmt(v) -> str:
    return "–" if v is None else (f"{v:,.1f}" if isinstance(v, float) else str(v))


def swept_key(params: list[SweepParam]) -> str:
    for p in params:
        if all(isinstance(v, (int, float)) for v in p.values):
            return p.key
    return params[0].key


def _order(v):
    return (0, v, "") if isinstance(v, (int, float)) else (1, 0, str(v))


def _lines(points: list[SweepPoint], swept: str, others: list[str]) -> dict[str, list[SweepPoint]]:
    out: dict[str, list[SweepPoint]] = {}
    for pt in points:
        out.setdefault(", ".join(f"{k}={pt.params[k]}" for k in others), []).append(pt)
    for pts in out.values():
        pts.sort(key=lambda p: _order(p.params[swept]))
    return out


def find_knee(points: list[tuple[Any, float]]) -> Any:
    """The smallest setting within ``KNEE_GAIN`` of the best throughput measured: more of the
    parameter adds less than that. Judged against the best rather than step by step, so one
    noisy point (a dip on a shared machine) does not end the search early."""
    pts = sorted(points, key=lambda p: _order(p[0]))
    if not pts:
        return None
    best = max(y for _, y in pts)
    return next(x for x, y in pts if y >= (1 - KNEE_GAIN) * best)


class Sweep:
    """Runs the grid, one drill at a time, printing progress and appending each point to sweep.jsonl.

    The ceiling is measured first (so progress lines read as a fraction of it) unless an earlier
    run of the same sweep folder already measured it. After every point, sweep.txt (table and
    recommendation) and the plot are rewritten: an interrupted sweep keeps all of it, and running
    the same command again skips the points already measured.
    """

    def __init__(self, drill_file: Path, params: list[SweepParam], out_dir: Path | None = None,
                 measure_ceiling: bool = True, log: Callable[[str], None] | None = None,
                 ceiling_records: int = 200_000, repeat: int = 1):
        if repeat < 1:
            raise SweepError(f"--repeat {repeat}: run each combination at least once")
        self.repeat = repeat
        from harness.scenario.validate import load_scenario
        self.drill_file = Path(drill_file)
        load_scenario(self.drill_file)  # fail before anything starts
        text = self.drill_file.read_text()
        self.drill = yaml.safe_load(text)
        self.fingerprint = hashlib.sha256(text.encode()).hexdigest()
        self.params = params
        name = self.drill.get("name", self.drill_file.stem)
        self.out_dir = Path(out_dir or Path("runs") / f"sweep-{name}-{datetime.now():%Y%m%d-%H%M%S}").resolve()
        self.measure_ceiling = measure_ceiling
        self.ceiling_records = ceiling_records
        self.log = log or (lambda m: print(f"mirrordrill sweep: {m}", file=sys.stderr, flush=True))
        for combo in self.combinations():
            load_scenario_text(apply_params(self.drill, combo))  # bad values fail here, not an hour in

    def combinations(self) -> list[dict]:
        return [dict(zip([p.key for p in self.params], vals))
                for vals in itertools.product(*(p.values for p in self.params))]

    def run(self) -> SweepResult:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        jsonl = self.out_dir / "sweep.jsonl"
        rows = _read_jsonl(jsonl)
        header = {"sweep": {"drill": str(self.drill_file), "drill_sha256": self.fingerprint,
                            "params": {p.key: list(p.values) for p in self.params}}}
        earlier = [r["sweep"] for r in rows if "sweep" in r]
        if earlier and earlier[-1].get("drill_sha256") != self.fingerprint:
            raise SweepError(f"{jsonl} holds points of another version of the drill ({earlier[-1].get('drill')}); "
                             "a resumed sweep must run the same drill: use a new --out folder")
        if not earlier:
            _append(jsonl, header)
        done = {_point_key(r["params"], r.get("run", 1)): r for r in rows if "params" in r and not r.get("error")}
        ceilings = [r["ceiling"] for r in rows if "ceiling" in r]
        afters = [r["ceiling_after"] for r in rows if "ceiling_after" in r]
        result = SweepResult(self.out_dir, self.params, [], Ceiling.from_json(ceilings[-1]) if ceilings else None,
                             ceiling_after=Ceiling.from_json(afters[-1]) if afters else None)
        # every run of every combination, in order: runs of one combination are spread out over the
        # sweep (all first runs, then all second runs) so a busy spell of the machine hits one run of many
        combos = [(combo, run) for run in range(1, self.repeat + 1) for combo in self.combinations()]
        self.log(f"{len(combos)} point(s), {len(done)} already measured in {jsonl}; load average "
                 f"{_fmt_load(_load_avg())} on {os.cpu_count()} cores")
        try:
            if self.measure_ceiling and result.ceiling is None:
                self.log("measuring this machine's ceiling (ProducerPerformance into a target, a plain consumer "
                         "on a source)")
                result.ceiling = measure_ceiling(self.out_dir / "ceiling", _record_size(self.drill),
                                                 records=self.ceiling_records, partitions=_partitions(self.drill),
                                                 log=self.log)
                _append(jsonl, {"ceiling": asdict(result.ceiling)})
            elif result.ceiling is not None:
                self.log(f"machine ceiling from the earlier run: {result.ceiling.records_s:,.0f} records/s")
            started, measured = time.monotonic(), 0
            for i, (combo, run) in enumerate(combos, 1):
                slug = "-".join(f"{k}={v}" for k, v in combo.items()).replace("/", "_") + (f"-run{run}" if run > 1 else "")
                run_dir = self.out_dir / "points" / f"{i:02d}-{slug}"
                key = _point_key(combo, run)
                if key in done:  # a resumed sweep keeps what it measured
                    point = SweepPoint.from_json(done[key])
                    self.log(f"[{i}/{len(combos)}] {slug}: already measured ({_fmt(point.capacity)} records/s)")
                else:
                    eta = ""
                    if measured:
                        per = (time.monotonic() - started) / measured
                        eta = f", ~{per * (len(combos) - i + 1) / 60:.0f} min left"
                    self.log(f"[{i}/{len(combos)}] {slug}: running the drill (load avg "
                             f"{_fmt_load(_load_avg())}){eta}")
                    point = self._run_point(run_dir, combo)
                    if point is None:  # the drill was interrupted: nothing to keep of this point
                        raise KeyboardInterrupt
                    point.run = run
                    _append(jsonl, asdict(point))
                    measured += 1
                self._add(result, point, Path(point.run_dir))
                if key not in done:
                    self._log_point(i, len(combos), slug, point)
            if self.measure_ceiling and measured:
                self.log("measuring the ceiling again, after the points")
                result.ceiling_after = measure_ceiling(self.out_dir / "ceiling-after", _record_size(self.drill),
                                                       records=self.ceiling_records,
                                                       partitions=_partitions(self.drill), log=self.log)
                _append(jsonl, {"ceiling_after": asdict(result.ceiling_after)})
        except KeyboardInterrupt:
            result.interrupted = True
            self.log(f"interrupted: {len(result.points)} point(s) kept in {jsonl}; "
                     "run the same command again to measure the rest")
            self._write(result)
            for line in (result.table() + "\n" + result.recommendation()).splitlines():
                self.log(line)
            raise
        self._write(result)
        return result

    def _run_point(self, run_dir: Path, combo: dict) -> SweepPoint | None:
        from harness.scenario.engine import Drill
        from harness.scenario.validate import load_scenario
        run_dir.mkdir(parents=True, exist_ok=True)
        scenario_file = run_dir.parent / f"{run_dir.name}.yaml"
        scenario_file.write_text(yaml.safe_dump(apply_params(self.drill, combo), sort_keys=False))
        t0 = time.monotonic()
        with CpuMeter(run_dir / "replicator") as cpu:
            drill = Drill(load_scenario(scenario_file), scenario_file, run_dir, log=self.log)
            summary = drill.run().summary  # stops everything it started, whatever happens
        if summary.get("interrupted"):
            return None
        try:
            point = measure_point(run_dir, combo, cpu, time.monotonic() - t0)
        except Exception as e:  # a drill that could not be checked: kept as a failed point
            point = SweepPoint(params=combo, run_dir=str(run_dir), passed=False, replicated_records_s=None,
                               sustained_records_s=None, produced_records_s=None, lag_bounded=False,
                               final_lag=None, latency_p50_ms=None, latency_p99_ms=None,
                               replicator_cpu_s=round(cpu.cpu_s, 1), replicator_cpu_cores=None, lost=None,
                               seconds=round(time.monotonic() - t0, 1), load_avg=_load_avg(),
                               error=f"{type(e).__name__}: {e}")
        _allure_point(run_dir, combo, point)
        return point

    def _add(self, result: SweepResult, point: SweepPoint, run_dir: Path) -> None:
        if result.ceiling and point.capacity and result.ceiling.records_s > 0:
            point.of_ceiling = round(point.capacity / result.ceiling.records_s, 3)
        result.points.append(point)
        if run_dir.joinpath("summary.json").exists():
            result.run_dirs.append(run_dir)
        self._write(result)

    def _log_point(self, i: int, n: int, slug: str, pt: SweepPoint) -> None:
        if pt.error:
            self.log(f"[{i}/{n}] {slug}: FAILED: {pt.error} (see {pt.run_dir})")
            return
        of = f" ({pt.of_ceiling:.0%} of the ceiling)" if pt.of_ceiling is not None else ""
        offered = "a backlog" if pt.produced_records_s is None else f"{_fmt(pt.produced_records_s)} records/s"
        self.log(f"[{i}/{n}] {slug}: {_fmt(pt.capacity)} records/s carried of {offered}{of}, "
                 f"lag {f'saturated {pt.saturated_s}s' if pt.saturated else 'bounded' if pt.lag_bounded else 'GROWING'}, p99 {pt.latency_p99_ms} ms, "
                 f"{pt.replicator_cpu_cores} cores, load avg {_fmt_load(pt.load_avg)}")

    def _write(self, result: SweepResult) -> None:
        """sweep.txt, the plot and the sweep's Allure result, as they stand."""
        try:
            result.plot = self._plot(result)
        except Exception as e:  # the figures matter more than the picture
            self.log(f"plot not drawn: {type(e).__name__}: {e}")
        (self.out_dir / "sweep.txt").write_text(result.table() + "\n\n" + result.recommendation() + "\n")
        try:
            _allure_sweep(result)
        except Exception as e:
            self.log(f"sweep not added to the Allure results: {type(e).__name__}: {e}")

    def _plot(self, result: SweepResult) -> Path | None:
        # a point that replicated nothing is a measurement (0), a point that failed to run is not
        rows = [dict(asdict(p), capacity=p.capacity) for p in result.representative()
                if not p.error and p.capacity is not None]
        if not rows:
            return None
        from reports.plots import sweep_plot
        png = self.out_dir / "sweep-throughput.png"
        label = "records/s carried"
        if result.ceiling:
            label += f" (ceiling {result.ceiling.records_s:,.0f}/s)"
        png.write_bytes(sweep_plot(rows, result.swept, "capacity", result.others, label))
        return png


def load_scenario_text(drill: dict) -> None:
    """Validate a drill's content as the engine will read it (raises ScenarioInvalid)."""
    import tempfile
    from harness.scenario.validate import load_scenario
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "point.yaml"
        f.write_text(yaml.safe_dump(drill, sort_keys=False))
        load_scenario(f)


def _fmt_load(load: tuple | None) -> str:
    return "/".join(f"{x:.1f}" for x in load) if load else "?"


def _append(path: Path, row: dict) -> None:
    with path.open("a") as f:
        f.write(json.dumps(row) + "\n")
        f.flush()
        os.fsync(f.fileno())


def _record_size(drill: dict) -> int:
    for b in drill.get("load", {}).get("backlog", []):
        return int(b.get("record_size", 1024))
    for p in drill.get("load", {}).get("producers", []):
        size = (p.get("record_size") or {}).get("fixed")
        if size:
            return int(size)
    return 1024


def _partitions(drill: dict) -> int:
    return max([int(t.get("partitions", 3)) for t in drill.get("topics", [])] or [3])


def _point_key(params: dict, run: int) -> str:
    """A point's identity in sweep.jsonl: its combination, and which run of it (run 1 unmarked, so
    sweeps written before --repeat existed resume as they are)."""
    return json.dumps(params, sort_keys=True) + (f"#{run}" if run > 1 else "")


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


# --- Allure ---------------------------------------------------------------------------------
def _allure_point(run_dir: Path, combo: dict, point: SweepPoint) -> None:
    """Make a point's Allure results one test per combination: its parameters name the
    combination (the drill's historyId names only scenario, replicator and flow, so every
    point would otherwise look like a retry of one test)."""
    import hashlib
    results = Path(run_dir) / "allure-results"
    label = ", ".join(f"{k}={v}" for k, v in combo.items())
    for f in results.glob("*-result.json"):
        r = json.loads(f.read_text())
        r["name"] = f"{r.get('name', '')} sweep {label}"
        r["historyId"] = hashlib.md5(f"{r.get('historyId', '')}\0{label}".encode()).hexdigest()
        known = {p.get("name") for p in r.get("parameters", [])}  # the drill already names its replicator
        r.setdefault("parameters", []).extend({"name": k, "value": str(v)} for k, v in combo.items() if k not in known)
        lag = f"saturated {point.saturated_s}s" if point.saturated else "bounded" if point.lag_bounded else "growing"
        r["parameters"] += [{"name": "carried records/s", "value": _fmt(point.capacity), "excluded": True},
                            {"name": "lag", "value": lag, "excluded": True}]
        f.write_text(json.dumps(r))


def _allure_sweep(result: SweepResult) -> None:
    """One Allure test result for the sweep itself (table, recommendation, plot), written beside
    the first point's results so ``mirrordrill report`` over the points shows it."""
    import hashlib
    import uuid
    if not result.run_dirs:
        return
    results = result.run_dirs[0] / "allure-results"
    if not results.exists():
        return
    for old in results.glob("sweep-*"):
        old.unlink()
    text = result.table() + "\n\n" + result.recommendation() + "\n"
    attachments = [{"name": "sweep table and recommendation", "source": "sweep-table-attachment.txt",
                    "type": "text/plain"}]
    (results / "sweep-table-attachment.txt").write_text(text)
    if result.plot and result.plot.exists():
        (results / "sweep-plot-attachment.png").write_bytes(result.plot.read_bytes())
        attachments.append({"name": "throughput vs " + result.swept, "source": "sweep-plot-attachment.png",
                            "type": "image/png"})
    now = int(time.time() * 1000)
    name = f"sweep over {', '.join(p.key for p in result.params)}"
    r = {"uuid": str(uuid.uuid4()), "name": name, "fullName": f"mirrordrill.sweep.{name}",
         "historyId": hashlib.md5(name.encode()).hexdigest(), "status": "passed" if result.points else "broken",
         # a zero-length result broke its page in Allure 3 once the history held an earlier one
         "start": result.started_ms, "stop": max(now, result.started_ms + 1), "description": text, "descriptionHtml": _sweep_html(result),
         "attachments": attachments,
         "labels": [{"name": "parentSuite", "value": "mirrordrill sweeps"}, {"name": "suite", "value": name},
                    {"name": "framework", "value": "mirrordrill"}],
         "parameters": [{"name": p.key, "value": ",".join(map(str, p.values))} for p in result.params]}
    (results / "sweep-result.json").write_text(json.dumps(r))


def _sweep_html(result: SweepResult) -> str:
    """The sweep's page: recommendation first, then the plot (inlined) and the table as typed."""
    import base64
    from html import escape
    parts = ["<h3>Recommendation</h3><ul>"]
    parts += [f"<li>{escape(line)}</li>" for line in result.recommendation().splitlines()]
    parts.append("</ul>")
    if result.plot and result.plot.exists():
        data = base64.b64encode(result.plot.read_bytes()).decode()
        parts.append(f'<img alt="throughput vs {escape(result.swept)}" style="max-width:100%" '
                     f'src="data:image/png;base64,{data}"/>')
    parts.append(f"<pre style='font-size:11px;overflow-x:auto'>{escape(result.table())}</pre>")
    return "".join(parts)

