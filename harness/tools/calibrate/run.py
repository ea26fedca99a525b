"""Running the drill N times for ``calibrate``: the sweep's runner, with one combination repeated.

A sweep already runs a drill repeatedly, one at a time, with progress, a journal that lets an
interrupted run resume, and per-run Allure results; calibration is a sweep of one point run
N times, whose figures are read from each run's saved summary.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from mirrordrill.harness.drill.replicators import sweepable_kinds
from mirrordrill.harness.drill.results import DrillSummary, ResultsUnavailable, load_results
from mirrordrill.harness.tools.calibrate.limits import Calibration, CalibrationError, observe
from mirrordrill.harness.tools.sweep.points import SweepParam
from mirrordrill.harness.tools.sweep.run import Sweep, SweepReports

CALIBRATION_FILE = "calibration.yaml"


@dataclass(frozen=True)
class CalibrationRun:
    calibration: Calibration
    out_dir: Path
    used: list[Path]  # run folders whose figures were used
    left_out: list[str]  # run folders left out, and why
    failed_now: list[str]  # used runs that failed the file's current expectations, and which


def machine() -> str:
    """'2 cores, 7.7 GiB RAM': what the figures were measured on."""
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
        return f"{os.cpu_count()} cores, {ram:.1f} GiB RAM"
    except (ValueError, OSError, AttributeError):
        return f"{os.cpu_count()} cores"


def header(drill_file: Path, summaries: list[DrillSummary], margin: float, profile: str = "full",
           record: Path | None = None, spark_master: str | None = None) -> str:
    """The comment above the expectations: what was measured, with what margin, and the record that
    keeps the sitting (its date, machine and figures: a drill file carries no dated sitting)."""
    s = summaries[0]
    mode = f" ({s.replicator_mode})" if s.replicator_mode not in ("n/a", "") else ""
    at = f" at the {profile} profile" if profile != "full" else ""
    at += f" on Spark master {spark_master}" if spark_master else ""
    sitting = f"the sitting: {record.as_posix()}" if record else "run with --record to keep the sitting as a record"
    return (f"# calibrated by 'mirrordrill calibrate': {len(summaries)} run(s) of {drill_file.name}{at} with "
            f"{s.replicator}{mode} ({sitting}); margin "
            f"{margin:.0%}: limits = worst run x {1 + margin:g} (+100 ms on latencies, +1 s on RTO and "
            f"convergence; throughput and acked >= worst run x {1 - margin:g}), rounded to 2 figures; "
            f"counts that were 0 in every run stay 0")


def calibrate(drill_file: Path, runs: int, margin: float, replicator: str | None = None, out_dir: Path | None = None,
              reports: SweepReports | None = None, log: Callable[[str], None] | None = None,
              profile: str = "full", record: Path | None = None, spark_master: str | None = None) -> CalibrationRun:
    """Run the drill ``runs`` times (resuming in ``out_dir`` if it holds some) and suggest its limits;
    ``record`` is the measurement record the caller writes of this sitting, named in the header."""
    if runs < 1:
        raise CalibrationError(f"--runs {runs}: run the drill at least once (3 is the project's practice)")
    log = log or (lambda m: print(f"mirrordrill calibrate: {m}", file=sys.stderr, flush=True))
    name = drill_file.stem
    from mirrordrill.harness.drill.validate import load_scenario
    kind = replicator or load_scenario(drill_file).replication.replicator
    if kind not in (sweepable := sweepable_kinds()):
        raise CalibrationError(f"{drill_file}: its replicator is {kind!r}; calibrate runs "
                               f"{' or '.join(sweepable)} (--replicator); for a command replicator, "
                               f"run 'mirrordrill run' N times and read each summary.json")
    params = [SweepParam("replicator", (kind,))] + ([SweepParam("profile", (profile,))] if profile != "full" else [])
    out_dir = out_dir or Path("runs") / f"calibrate-{name}-{kind}-{datetime.now():%Y%m%d-%H%M%S}"
    sweep = Sweep(drill_file, params, out_dir, measure_ceiling=False, log=log, repeat=runs, reports=reports,
                  made_by="mirrordrill calibrate", spark_master=spark_master)
    result = sweep.run()
    summaries, used, left_out, failed_now = [], [], [], []
    for run_dir in result.run_dirs:
        try:
            s = load_results(run_dir).summary
        except ResultsUnavailable as e:
            left_out.append(f"{run_dir}: {e}")
            continue
        if s.interrupted or s.error:
            left_out.append(f"{run_dir}: {'interrupted' if s.interrupted else s.error}")
            continue
        summaries.append(s)
        used.append(run_dir)
        if not s.passed:  # still what the drill measured: calibration is about what happens, not the old limits
            failed_now.append(f"{run_dir.name}: " + "; ".join(f"{e.name} (actual {e.actual})"
                                                             for e in s.expectations if not e.passed))
    if not summaries:
        raise CalibrationError(f"no run of {drill_file} finished with figures to calibrate from"
                               + (f" ({'; '.join(left_out)})" if left_out else "") + f"; see {sweep.out_dir}")
    calibration = Calibration(header(drill_file, summaries, margin, profile, record, spark_master),
                              observe(summaries), margin)
    (sweep.out_dir / CALIBRATION_FILE).write_text(calibration.range_table() + "\n\n" + calibration.expectations_yaml())
    return CalibrationRun(calibration, sweep.out_dir, used, left_out, failed_now)
