"""Running a sweep: the grid, one drill at a time, progress on the console, ``sweep.txt`` after each point."""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Protocol

import yaml

from mirrordrill.harness.drill import run_folder
from mirrordrill.harness.drill.flight_recordings import recording_summaries
from mirrordrill.harness.tools.sweep.bottleneck import link_bandwidth_kb_s, replicator_cores
from mirrordrill.harness.tools.sweep.ceiling import measure_ceiling
from mirrordrill.harness.tools.sweep.journal import Journal
from mirrordrill.harness.tools.sweep.measure import failed_point, fmt_load, load_avg, measure_point
from mirrordrill.harness.tools.sweep.params import (
    SweepError,
    absolute_sample_files,
    apply_params,
    asked_rate,
    combinations,
    partitions,
    record_size,
    validate_drill,
)
from mirrordrill.harness.tools.sweep.points import SweepParam, SweepPoint
from mirrordrill.harness.tools.sweep.result import SweepResult
from mirrordrill.harness.tools.sweep.table import fmt
from mirrordrill.primitives.cpu import CpuByRole, CpuMeter


def point_containers(backend: str, hint: str):
    """On the docker backend, the point's Compose project name and a CPU reader of its Spark and
    replicator containers; (None, None) on the process backend."""
    if backend != "docker":
        return None, None
    from mirrordrill.harness.lab.compose.backend import project_name
    from mirrordrill.harness.lab.compose.cpu import container_cpu
    from mirrordrill.harness.lab.docker.engine import ensure_engine
    project = project_name(hint)
    return project, container_cpu(ensure_engine(), project, ("spark", "replicator"))


def point_roles(run_dir: Path, drill: dict) -> dict[str, list[Path]]:
    """The folders a point's processes work in, by role, for :class:`CpuByRole`: the replicator
    (and Spark standalone's executors), each started cluster's brokers, the network (Toxiproxy,
    in the environment's own folder) and the load's worker processes. The harness (the checker's
    observers, Locust's master) is this process."""
    env = run_dir / "env"
    clusters = [name for name, c in (drill.get("clusters") or {}).items()
                if not (isinstance(c, dict) and "existing" in c)]
    return {"replicator": [run_dir / "replicator", env / "spark"],
            **{f"brokers {name}": [env / name] for name in clusters},
            "network": [env], "load": [run_dir / "load"]}


class SweepReports(Protocol):
    """What draws a sweep's plot and writes its Allure results: the CLI hands one in (reports/ sits
    above the harness), so the sweep itself only saves figures."""

    def record_point(self, run_dir: Path, combo: dict, point: SweepPoint) -> None:
        """A freshly measured point's drill results become Allure results, one test per combination."""

    def draw_plot(self, result: SweepResult) -> Path | None:
        """The throughput plot as the sweep stands; its path, or None with nothing to draw."""

    def write_allure(self, result: SweepResult) -> None:
        """The sweep's own Allure result (table, recommendation, plot), as it stands."""


class Sweep:
    """Runs the grid, one drill at a time, printing progress and appending each point to sweep.jsonl.

    The ceiling is measured first (so progress lines read as a fraction of it) unless an earlier
    run of the same sweep folder already measured it. After every point, sweep.txt (table and
    recommendation), and through ``reports`` the plot and the Allure result, are rewritten: an
    interrupted sweep keeps all of it, and running the same command again skips the points
    already measured.
    """

    def __init__(self, drill_file: Path, params: list[SweepParam], out_dir: Path | None = None,
                 measure_ceiling: bool = True, log: Callable[[str], None] | None = None,
                 ceiling_records: int = 200_000, repeat: int = 1, reports: SweepReports | None = None,
                 backend: str | None = None, advise: bool = True, made_by: str = "mirrordrill sweep",
                 spark_master: str | None = None, flight_recording: bool = False):
        if repeat < 1:
            raise SweepError(f"--repeat {repeat}: run each combination at least once")
        self.repeat = repeat
        self.backend = backend or "processes"  # where each point's brokers run (sweep --backend)
        self.spark_master = spark_master  # sweep --spark-master, over the file's replication.spark.master
        self.flight_recording = flight_recording  # sweep --jfr: every point's replicator JVMs record
        from mirrordrill.harness.drill.validate import load_scenario
        self.drill_file = Path(drill_file)
        load_scenario(self.drill_file)  # fail before anything starts
        text = self.drill_file.read_text()
        self.drill = yaml.safe_load(text)
        absolute_sample_files(self.drill, self.drill_file.resolve().parent)
        self.fingerprint = hashlib.sha256(text.encode()).hexdigest()
        self.params = params
        name = self.drill.get("name", self.drill_file.stem)
        self.out_dir = Path(out_dir or Path("runs") / f"sweep-{name}-{datetime.now():%Y%m%d-%H%M%S}").resolve()
        refused = run_folder.refusal(self.out_dir)  # before any point runs, and nothing deleted
        if refused:
            raise SweepError(refused)
        self.made_by = made_by
        self.measure_ceiling = measure_ceiling
        self.ceiling_records = ceiling_records
        self.reports = reports
        # a sizing sweep ends with where the flow stops growing; a comparison (bench drills, which
        # sweeps replicator=pyspark,mirrormaker2) has no knee to find, and saying one was not seen misleads
        self.advise = advise
        self.log = log or (lambda m: print(f"mirrordrill sweep: {m}", file=sys.stderr, flush=True))
        for combo in self.combinations():
            validate_drill(apply_params(self.drill, combo))  # bad values fail here, not an hour in

    def combinations(self) -> list[dict]:
        return combinations(self.params)

    def run(self) -> SweepResult:
        run_folder.take(self.out_dir, self.made_by)
        journal = Journal.open(self.out_dir / "sweep.jsonl", str(self.drill_file), self.fingerprint, self.params)
        result = SweepResult(self.out_dir, self.params, [], journal.ceiling, ceiling_after=journal.ceiling_after)
        # every run of every combination, in order: runs of one combination are spread out over the
        # sweep (all first runs, then all second runs) so a busy spell of the machine hits one run of many
        combos = [(combo, run) for run in range(1, self.repeat + 1) for combo in self.combinations()]
        self.log(f"{len(combos)} point(s), {len(journal.done)} already measured in {journal.path}; load average "
                 f"{fmt_load(load_avg())} on {os.cpu_count()} cores")
        try:
            if self.measure_ceiling and result.ceiling is None:
                self.log("measuring this machine's ceiling (ProducerPerformance into a target, a plain consumer "
                         "on a source)")
                result.ceiling = self._measure_ceiling("ceiling")
                journal.add_ceiling(result.ceiling)
            elif result.ceiling is not None:
                self.log(f"machine ceiling from the earlier run: {result.ceiling.records_s:,.0f} records/s")
            started, measured = time.monotonic(), 0
            for i, (combo, run) in enumerate(combos, 1):
                slug = "-".join(f"{k}={v}" for k, v in combo.items()).replace("/", "_") + (f"-run{run}" if run > 1 else "")
                run_dir = self.out_dir / "points" / f"{i:02d}-{slug}"
                point = journal.measured(combo, run)
                if point is not None:  # a resumed sweep keeps what it measured
                    self.log(f"[{i}/{len(combos)}] {slug}: already measured ({fmt(point.capacity)} records/s)")
                    self._add(result, point, Path(point.run_dir))
                    continue
                eta = ""
                if measured:
                    per = (time.monotonic() - started) / measured
                    eta = f", ~{per * (len(combos) - i + 1) / 60:.0f} min left"
                self.log(f"[{i}/{len(combos)}] {slug}: running the drill (load avg {fmt_load(load_avg())}){eta}")
                point = self._run_point(run_dir, combo)
                if point is None:  # the drill was interrupted: nothing to keep of this point
                    raise KeyboardInterrupt
                point.run = run
                journal.add_point(point)
                measured += 1
                self._add(result, point, Path(point.run_dir))
                self._log_point(i, len(combos), slug, point)
            if self.measure_ceiling and measured:
                self.log("measuring the ceiling again, after the points")
                result.ceiling_after = self._measure_ceiling("ceiling-after")
                journal.add_ceiling(result.ceiling_after, after=True)
        except KeyboardInterrupt:
            result.interrupted = True
            self.log(f"interrupted: {len(result.points)} point(s) kept in {journal.path}; "
                     "run the same command again to measure the rest")
            self._write(result)
            for line in self._text(result).splitlines():
                self.log(line)
            raise
        self._write(result)
        return result

    def _measure_ceiling(self, folder: str):
        return measure_ceiling(self.out_dir / folder, record_size(self.drill), records=self.ceiling_records,
                               partitions=partitions(self.drill), log=self.log)

    def _run_point(self, run_dir: Path, combo: dict) -> SweepPoint | None:
        from mirrordrill.harness.drill.engine import Drill
        from mirrordrill.harness.drill.validate import check_file
        run_dir.mkdir(parents=True, exist_ok=True)
        scenario_file = run_dir.parent / f"{run_dir.name}.yaml"
        content = apply_params(self.drill, combo)
        scenario_file.write_text(yaml.safe_dump(content, sort_keys=False))
        t0 = time.monotonic()
        project, extra = point_containers(self.backend, run_dir.name)
        # the replicator's processes, and Spark standalone's executors (the workers start them in their folders)
        with CpuMeter([run_dir / "replicator", run_dir / "env" / "spark"], extra=extra) as cpu, \
                CpuByRole(point_roles(run_dir, content), self_role="harness") as by_role:
            checked = check_file(scenario_file, spark_master=self.spark_master)
            drill = Drill(checked.scenario, scenario_file, run_dir, log=self.log, backend=self.backend,
                          backend_project=project, plan=checked.plan, spark_master=self.spark_master,
                          flight_recording=self.flight_recording)
            summary = drill.run().summary  # stops everything it started, whatever happens
        if summary.interrupted:
            return None
        try:
            point = measure_point(run_dir, combo, cpu, time.monotonic() - t0, by_role)
        except Exception as e:  # a drill that could not be checked: kept as a failed point
            point = failed_point(run_dir, combo, cpu.cpu_s, time.monotonic() - t0, e)
        point.asked_records_s = asked_rate(content)
        if self.flight_recording:
            point.flight_recordings = recording_summaries(run_dir)
        point.replicator_cores_available = replicator_cores(content, self.spark_master)
        point.wan_bandwidth_kb_s = link_bandwidth_kb_s(content)
        if self.reports is not None:
            self.reports.record_point(run_dir, combo, point)
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
        offered = "a backlog" if pt.produced_records_s is None else f"{fmt(pt.produced_records_s)} records/s"
        if pt.load_short:
            offered += f" (LOAD SHORT: {fmt(pt.asked_records_s)} asked)"
        lag = pt.lag_label if pt.saturated or pt.lag_bounded or pt.backlog_records_s is not None else "GROWING"
        short = " (too short for a steady rate: sweep a larger backlog)" if pt.backlog_too_short else ""
        self.log(f"[{i}/{n}] {slug}: {fmt(pt.capacity)} records/s carried of {offered}{of}, "
                 f"lag {lag}{short}, p99 {pt.latency_p99_ms} ms, "
                 f"{pt.replicator_cpu_cores} cores, load avg {fmt_load(pt.load_avg)}")

    def _text(self, result: SweepResult) -> str:
        return result.table() + ("\n\n" + result.recommendation() if self.advise else "")

    def _write(self, result: SweepResult) -> None:
        """sweep.txt, and through ``reports`` the plot and the sweep's Allure result, as they stand."""
        if self.reports is not None:
            try:
                result.plot = self.reports.draw_plot(result)
            except Exception as e:  # the figures matter more than the picture
                self.log(f"plot not drawn: {type(e).__name__}: {e}")
        (self.out_dir / "sweep.txt").write_text(self._text(result) + "\n")
        if self.reports is not None:
            try:
                self.reports.write_allure(result)
            except Exception as e:
                self.log(f"sweep not added to the Allure results: {type(e).__name__}: {e}")
