"""``mirrordrill bench drills``: every drill, for the bundled replicator and MirrorMaker 2, side by side.

Each drill is a sweep over ``replicator=pyspark,mirrormaker2`` repeated N times, so the runs
interleave (pyspark, MM2, pyspark, MM2, ...: a busy spell of a shared machine hits one run of
each rather than all runs of one) and an interrupted bench resumes where it stopped (each
drill's ``sweep.jsonl``). The figures come from each run's saved summary; the table shows
each replicator's median per figure, and ``bench.json`` / ``bench.md`` keep them.

A drill with an unplanned failover is swept over ``failover_shift_s`` instead of repeated: run k
of N kills the primary k/N of a checkpoint interval later than the file says, so the N runs
sample the whole checkpoint cycle, the same phases for both replicators, and its reprocessing
is their mean (see ``checkpoint_phases``).
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from mirrordrill.harness.drill import run_folder
from mirrordrill.harness.drill.metrics import METRICS, BenchColumn, Metric
from mirrordrill.harness.drill.replicators.setup import DRILL_FLOW_INTERVALS
from mirrordrill.harness.drill.results import DrillSummary, ResultsUnavailable, load_results
from mirrordrill.harness.tools.calibrate.run import machine
from mirrordrill.harness.tools.sweep.journal import read_jsonl
from mirrordrill.harness.tools.sweep.measure import fmt_load, load_avg
from mirrordrill.harness.tools.sweep.points import SweepParam
from mirrordrill.harness.tools.sweep.run import Sweep, SweepReports

REPLICATORS = ("pyspark", "mirrormaker2")

# Kafka Connect's own defaults (DistributedConfig) for the worker settings that decide what losing an
# MM2 node costs. A drill that tunes them also gets one MM2 run with these: what a team that never
# tuned them would see (a stall of minutes: the bench's business, not the suite's).
CONNECT_DEFAULTS = {"scheduled.rebalance.max.delay.ms": 300_000, "session.timeout.ms": 10_000,
                    "heartbeat.interval.ms": 3_000}
CONNECT_DEFAULTS_LABEL = "mirrormaker2, Connect's defaults"
CONNECT_DEFAULTS_DIR = "connect-defaults"
# A drill whose bundled replicator runs a standby on the node's lock file also gets ours with the lease
# alone (``standby: lease``): what two drivers on different machines would see after a kill.
LEASE_ALONE_DIR = "lease-alone"


def lease_alone_label() -> str:
    from mirrordrill.replicator.lease import SESSION_TIMEOUT_MS
    return f"pyspark, lease alone ({SESSION_TIMEOUT_MS / 1000:g} s)"

# The table's columns in order: the catalogue's metrics with a bench column (harness/drill/metrics.py)
# and the bench's own start-up figures; a registered metric's column comes after these.
_ORDER = ("duplicates", "latency_p50_ms", "latency_p99_ms", "stall_s", "rto_s", "reprocessed", "first_start_s", "restart_s",
          "throughput_records_s")
_START_UP = {"first_start_s": ("start s", 1), "restart_s": ("restart s", 1)}
# a run's figure per kind of timeline step: the longest stall overlapping a step of that kind
# (``checker.stall``), as "stall_s after kill_replicator_node"
STEP_STALL_PREFIX = "stall_s after "


def figure_columns() -> dict[str, tuple[str, int]]:
    """figure -> (column heading, digits shown), in the table's order."""
    columns = {**_START_UP, **{column.figure: (column.heading, column.digits) for _, column in _bench_metrics()}}
    return {k: columns[k] for k in sorted(columns, key=lambda k: _ORDER.index(k) if k in _ORDER else len(_ORDER))}


def _bench_metrics() -> list[tuple[Metric, BenchColumn]]:
    return [(m, m.bench) for m in METRICS.values() if m.bench is not None]


def _metric_figure(m: Metric, column: BenchColumn, summary: DrillSummary) -> float | None:
    """One metric over the run's flows or groups, as its bench column combines it."""
    families: dict[str, Sequence[tuple[str, object]]] = {
        "flow": [(f.name, f) for f in summary.flows], "failover": [(g.group, g) for g in summary.failovers],
        "failback": [(b.name, b) for b in summary.failbacks]}
    entries = families[m.family]
    per_scope: dict[str, float] = {}
    for scope, entry in entries:
        if (value := m.read(entry)) is not None:
            per_scope[scope] = max(per_scope.get(scope, value), value)
    if not per_scope:
        return None
    return sum(per_scope.values()) if column.combine == "sum" else max(per_scope.values())


SHIFT_KEY = "failover_shift_s"
CHECKPOINT_INTERVAL_KEY = "emit.checkpoints.interval.seconds"


class BenchError(ValueError):
    """Bad arguments: the message names the cause and the fix."""


def checkpoint_phases(drill: dict, runs: int) -> tuple[float, ...] | None:
    """How far each run moves the drill's unplanned failover: 0, 1/N, ..., (N-1)/N of its flows'
    checkpoint interval; None for a drill with no unplanned failover at a set time.

    Why: a group's replay after an unplanned failover is the load's rate times the age of the newest
    checkpoint at the kill. Both replicators emit checkpoints every interval from their process's
    start, and the drill kills at a fixed second, so N runs at the file's time meet one phase N
    times, and which phase each replicator meets decided the comparison
    (see docs/measurements/behind-the-code.md#harness-tools-bench-drills-py). Evenly spread phases
    make the mean the replay over the whole cycle, for each replicator."""
    steps = [s for s in drill.get("timeline") or [] if isinstance(s, dict)]
    if not any(s.get("do") == "unplanned_failover" and s.get("at") is not None for s in steps):
        return None
    intervals = [float((f.get("settings") or {}).get(CHECKPOINT_INTERVAL_KEY,
                                                      DRILL_FLOW_INTERVALS[CHECKPOINT_INTERVAL_KEY]))
                 for f in (drill.get("replication") or {}).get("flows") or []]
    interval = max(intervals or [float(DRILL_FLOW_INTERVALS[CHECKPOINT_INTERVAL_KEY])])
    return tuple(round(k * interval / runs, 3) for k in range(runs))


def figures(summary: DrillSummary) -> dict[str, float | None]:
    """One run's figures: counts summed over flows and groups, latencies and RTO of the worst flow or group.

    Start-up is the replicator's own report (the bundled one only): its first process start, and
    the slowest later start (a restart after a kill), each to the first record moved."""
    starts = sorted(summary.replicator_starts, key=lambda t: t.get("started_at_ms") or 0)
    # the replicator says which starts were restarts of one of its processes (after a kill). Not
    # by time: a replicator killed 15 s in now starts again within a minute of its first start.
    # Summaries from before it said so: a process name (one per location) seen before.
    firsts: list[dict] = []
    later: list[dict] = []
    seen: set[str | None] = set()
    for t in starts:
        restart = t["restart"] if "restart" in t else t.get("process") in seen
        (later if restart else firsts).append(t)
        seen.add(t.get("process"))

    def worst(values):
        values = [v for v in values if v is not None]
        return max(values) if values else None
    return {**{column.figure: _metric_figure(m, column, summary) for m, column in _bench_metrics()},
            "first_start_s": worst(t.get("first_record_s") for t in firsts),
            "restart_s": worst(t.get("first_record_s") for t in later), **step_stalls(summary)}


def step_stalls(summary: DrillSummary) -> dict[str, float]:
    """Per kind of timeline step, the longest stall of any flow overlapping a step of that kind: what
    each fault cost, where the run's stall is only the worst of them."""
    out: dict[str, float] = {}
    for flow in summary.flows:
        for e in flow.events:
            if e.stall_s is not None:
                key = STEP_STALL_PREFIX + e.kind
                out[key] = max(out.get(key, e.stall_s), e.stall_s)
    return out


@dataclass
class BenchCell:
    """One drill with one replicator: each run's figures, and their medians."""

    drill: str
    replicator: str
    runs: list[dict] = field(default_factory=list)  # {"run_dir", "passed", **figures}
    left_out: list[str] = field(default_factory=list)
    # the runs moved the unplanned failover through the checkpoint cycle (checkpoint_phases):
    # their reprocessing is averaged, since each run measured one phase of it
    phase_spread: bool = False

    @property
    def medians(self) -> dict[str, float | None]:
        """Each figure's median over the runs; with the failover spread over the checkpoint cycle,
        reprocessing's mean (the median of three evenly spread phases still moves with where the
        cycle began, by a third of an interval's records)."""
        out = {}
        step_keys = sorted({k for r in self.runs for k in r if k.startswith(STEP_STALL_PREFIX)})
        for key in [*figure_columns(), *step_keys]:
            values = [r[key] for r in self.runs if r.get(key) is not None]
            average = statistics.mean if self.phase_spread and key == "reprocessed" else statistics.median
            out[key] = average(values) if values else None
        return out

    @property
    def passed(self) -> str:
        return f"{sum(1 for r in self.runs if r['passed'])}/{len(self.runs)}"


@dataclass
class BenchResult:
    out_dir: Path
    runs: int
    cells: list[BenchCell]
    started: str
    load_after: str
    machine: str

    def markdown(self) -> str:
        """The medians as a markdown table, pyspark and MM2 in adjacent rows per drill."""
        cells = [{"drill": c.drill, "replicator": c.replicator, "passed": c.passed,
                  "medians": c.medians, "phase_spread": c.phase_spread} for c in self.cells]
        lines = [f"Medians of {self.runs} interleaved run(s) per replicator, {self.started}, on {self.machine} "
                 f"(load average after the runs: {self.load_after}). Start/restart: seconds from the "
                 f"replicator process's start to its first record moved (the bundled replicator reports it; "
                 f"MM2 does not).", "", *side_by_side_table(cells)]
        if steps := step_stall_table(cells):
            lines += ["", *steps]
        return "\n".join(lines)

    def to_json(self) -> dict:
        """What bench.json holds, and a measurement record's figures."""
        return {"runs": self.runs, "started": self.started, "machine": self.machine, "load_after": self.load_after,
                "cells": [{**asdict(c), "medians": c.medians, "passed": c.passed} for c in self.cells]}

    def save(self) -> tuple[Path, Path]:
        js, md = self.out_dir / "bench.json", self.out_dir / "bench.md"
        js.write_text(json.dumps(self.to_json(), indent=2, default=str))
        md.write_text(self.markdown() + "\n")
        return js, md


def side_by_side_table(cells: list[dict], step_stall_columns: bool = False) -> list[str]:
    """The table's lines from cells as bench.json (and a measurement record) keeps them: drill,
    replicator, passed, medians, phase_spread; with ``step_stall_columns``, a stall column per kind
    of timeline step the cells measured."""
    columns = figure_columns()
    if step_stall_columns:
        kinds = sorted({k for c in cells for k in c["medians"] if k.startswith(STEP_STALL_PREFIX)})
        columns |= {k: (f"stall s, {k.removeprefix(STEP_STALL_PREFIX)}", 1) for k in kinds}
    head = ["drill", "replicator", "passed"] + [h for h, _ in columns.values()]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in cells:
        m = c["medians"]
        row = [c["drill"], c["replicator"], c["passed"]] + [_fmt(m.get(k), digits) for k, (_, digits) in columns.items()]
        if c.get("phase_spread") and m.get("reprocessed") is not None:
            row[3 + list(columns).index("reprocessed")] += "*"
        lines.append("| " + " | ".join(row) + " |")
    if any(c.get("phase_spread") for c in cells):
        lines += ["", "\\* The mean over runs whose unplanned failover came evenly later through one checkpoint "
                      "interval (0, 1/N, ... of it), the same phases for both replicators: the replay over the "
                      "whole checkpoint cycle, not the phase one fixed kill time meets."]
    return lines


def step_stall_table(cells: list[dict]) -> list[str]:
    """Per drill, replicator and kind of timeline step: the median of the longest stall overlapping such a step."""
    lines = ["Stall per kind of step (median over the runs of the longest stall of any flow overlapping "
             "a step of that kind, s):", "", "| drill | replicator | step | stall s |", "|---|---|---|---|"]
    rows = [f"| {c['drill']} | {c['replicator']} | {k.removeprefix(STEP_STALL_PREFIX)} | {_fmt(v, 1)} |"
            for c in cells for k, v in sorted(c["medians"].items()) if k.startswith(STEP_STALL_PREFIX)]
    return lines + rows if rows else []


def _fmt(v: float | None, digits: int) -> str:
    if v is None:
        return "-"
    return f"{v:,.{digits}f}"


def bench(drill_files: list[Path], runs: int, out_dir: Path | None = None, reports: SweepReports | None = None,
          log: Callable[[str], None] | None = None) -> BenchResult:
    """Run every drill ``runs`` times per replicator, interleaved; resumes from ``out_dir`` if it holds runs."""
    if runs < 1:
        raise BenchError(f"--runs {runs}: run each drill at least once per replicator (3 is the project's practice)")
    if not drill_files:
        raise BenchError("no drill files: pass --drills FILE [FILE ...] or leave it out for every scenarios/*.yaml")
    missing = [str(f) for f in drill_files if not f.is_file()]
    if missing:
        raise BenchError(f"no drill file at {', '.join(missing)}; pass paths such as scenarios/quickstart.yaml")
    log = log or (lambda m: print(f"mirrordrill bench: {m}", file=sys.stderr, flush=True))
    out_dir = (out_dir or Path("runs") / f"bench-{datetime.now():%Y%m%d-%H%M%S}").resolve()
    refused = run_folder.refusal(out_dir)  # the same folder again resumes; a foreign one is refused, untouched
    if refused:
        raise BenchError(refused)
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    # every drill is checked before the first one runs: a bad file fails now, not an hour in
    sweeps = [(f, sweep, label) for f in drill_files for sweep, label in _sweeps(f, runs, out_dir, log, reports)]
    run_folder.take(out_dir, "mirrordrill bench")
    cells: list[BenchCell] = []
    try:
        for f, sweep, label in sweeps:
            spread = next((p.values for p in sweep.params if p.key == SHIFT_KEY), None)
            log(f"{f.stem}: {sweep.repeat} run(s) with {label}" if label else
                f"{f.stem}: {runs} run(s) each of {' and '.join(REPLICATORS)}, interleaved"
                + (f"; the unplanned failover moved {', '.join(f'{v:g}' for v in spread)} s later in turn, "
                   "through one checkpoint interval" if spread else ""))
            sweep.run()
            cells.extend(collect(f.stem, sweep.out_dir, label))
            # after every drill: an interrupted bench keeps its table so far
            BenchResult(out_dir, runs, cells, started, fmt_load(load_avg()), machine()).save()
    except KeyboardInterrupt:
        if sweep.out_dir.exists():  # the interrupted drill's finished runs count too
            cells.extend(collect(f.stem, sweep.out_dir))
        BenchResult(out_dir, runs, cells, started, fmt_load(load_avg()), machine()).save()
        log(f"interrupted: the table so far is in {out_dir / 'bench.md'}; the same command again runs the rest")
        raise
    return BenchResult(out_dir, runs, cells, started, fmt_load(load_avg()), machine())


def _sweeps(drill_file: Path, runs: int, out_dir: Path, log, reports) -> list[tuple[Sweep, str | None]]:
    """The drill's sweep: the replicators repeated ``runs`` times, or, for a drill with an unplanned
    failover, once at each of ``runs`` phases of the checkpoint cycle (pyspark and MM2 at each);
    then, for a drill that tunes Connect's worker, MM2 once with Connect's defaults (its label), and for
    a drill with ours' standby on the node's lock file, ours ``runs`` times with the lease alone."""
    import yaml
    drill = yaml.safe_load(drill_file.read_text()) or {}
    phases = checkpoint_phases(drill, runs)
    params = [SweepParam("replicator", REPLICATORS)]
    if phases is not None:
        params.insert(0, SweepParam(SHIFT_KEY, phases))
    sweeps: list[tuple[Sweep, str | None]] = [(Sweep(
        drill_file, params, out_dir / drill_file.stem, measure_ceiling=False, log=log,
        repeat=1 if phases is not None else runs, reports=reports, advise=False, made_by="mirrordrill bench"), None)]
    if (untuned := connect_defaults_params(drill)) is not None:
        sweeps.append((Sweep(drill_file, untuned, out_dir / f"{drill_file.stem}-{CONNECT_DEFAULTS_DIR}",
                             measure_ceiling=False, log=log, reports=reports, advise=False,
                             made_by="mirrordrill bench"), CONNECT_DEFAULTS_LABEL))
    if (drill.get("replication") or {}).get("standby") is True:
        lease_alone = [SweepParam("replicator", ("pyspark",)), SweepParam("standby", ("lease",))]
        sweeps.append((Sweep(drill_file, lease_alone, out_dir / f"{drill_file.stem}-{LEASE_ALONE_DIR}",
                             measure_ceiling=False, log=log, repeat=runs, reports=reports, advise=False,
                             made_by="mirrordrill bench"), lease_alone_label()))
    return sweeps


def connect_defaults_params(drill: dict) -> list[SweepParam] | None:
    """MM2 with Connect's defaults in place of the worker settings the drill tunes (None: it tunes none),
    and a drain long enough for the delayed rebalance to hand a lost node's tasks over."""
    from mirrordrill.harness.drill.durations import parse_duration
    from mirrordrill.harness.tools.sweep.params import MM2_WORKER_PREFIX
    worker = ((drill.get("replication") or {}).get("mirrormaker2") or {}).get("worker") or {}
    tuned = {k: v for k, v in CONNECT_DEFAULTS.items() if k in worker and str(worker[k]) != str(v)}
    if not tuned:
        return None
    wait_s = (CONNECT_DEFAULTS["scheduled.rebalance.max.delay.ms"] + CONNECT_DEFAULTS["session.timeout.ms"]) / 1000
    drain_s = parse_duration(drill.get("drain_timeout", 120)) + wait_s
    return [SweepParam("replicator", ("mirrormaker2",)),
            *(SweepParam(f"{MM2_WORKER_PREFIX}{k}", (v,)) for k, v in tuned.items()),
            SweepParam("drain_timeout", (drain_s,))]


def collect(drill: str, sweep_dir: Path, label: str | None = None) -> list[BenchCell]:
    """Each replicator's runs of one drill, from the run folders of its sweep (finished runs only);
    with ``label``, the sweep ran one setting of one replicator (the label's first word), whose cell it names."""
    if label is not None:
        kind = label.split(",")[0]
        (ran,) = [c for c in collect(drill, sweep_dir) if c.replicator == kind]
        return [BenchCell(drill, label, ran.runs, ran.left_out)]
    by_kind = {k: BenchCell(drill, k) for k in REPLICATORS}
    shifts = {Path(r["run_dir"]).resolve(): r["params"][SHIFT_KEY]
              for r in read_jsonl(sweep_dir / "sweep.jsonl") if SHIFT_KEY in (r.get("params") or {})}
    for run_dir in sorted(p.parent for p in (sweep_dir / "points").glob("*/summary.json")):
        try:
            s = load_results(run_dir).summary
        except ResultsUnavailable as e:
            by_kind[REPLICATORS[0]].left_out.append(f"{run_dir}: {e}")
            continue
        cell = by_kind.get(s.replicator)
        if cell is None:
            continue
        if s.interrupted or s.error:
            cell.left_out.append(f"{run_dir}: {'interrupted' if s.interrupted else s.error}")
            continue
        shift = shifts.get(run_dir.resolve())
        if shift is not None:
            cell.phase_spread = True
        cell.runs.append({"run_dir": str(run_dir), "passed": s.passed, **figures(s),
                          **({SHIFT_KEY: shift} if shift is not None else {})})
    return list(by_kind.values())
