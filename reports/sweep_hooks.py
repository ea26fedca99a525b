"""What the CLI hands a sweep or a calibration to draw as it goes: the harness sits below reports/,
so the sweep calls these hooks (duck-typed: nothing of the harness is imported here)."""

from __future__ import annotations

import sys
from pathlib import Path


class SweepReports:
    """The sweep's plot and Allure results, drawn by reports/ (above the harness) as the sweep goes:
    after every point and on every way out, Ctrl-C included."""

    def __init__(self, log=None) -> None:
        self.log = log or (lambda m: print(f"mirrordrill: {m}", file=sys.stderr, flush=True))

    def record_point(self, run_dir: Path, combo: dict, point) -> None:
        from mirrordrill.reports.allure_results import record_allure_results
        from mirrordrill.reports.sweep_allure import label_point_results
        # the drill saved its results; its Allure results are written here, then named for the combination
        if record_allure_results(run_dir, self.log) is not None:
            c = point.capacity  # as the sweep's table prints it
            capacity = "–" if c is None else (f"{c:,.1f}" if isinstance(c, float) else str(c))
            label_point_results(run_dir / "allure-results", combo, capacity, point.lag_label)

    def draw_plot(self, result) -> Path | None:
        from mirrordrill.reports.sweep_plot import draw_sweep_plot, draw_wan_cpu_plot
        # a point that replicated nothing is a measurement (0), a point that failed to run is not
        capacities = [(p.params, p.capacity) for p in result.representative() if not p.error and p.capacity is not None]
        draw_wan_cpu_plot(result.out_dir / "sweep-wan-cpu.png",
                          [{"params": p.params, "wan_bytes_per_record": p.wan_bytes_per_record,
                            "replicator_cpu_cores": p.replicator_cpu_cores} for p in result.representative() if not p.error],
                          result.swept, result.others)
        return draw_sweep_plot(result.out_dir / "sweep-throughput.png", capacities, result.swept, result.others,
                               result.ceiling.records_s if result.ceiling else None)

    def write_allure(self, result) -> None:
        from mirrordrill.reports.sweep_allure import write_sweep_result
        if result.run_dirs:
            write_sweep_result(result.run_dirs[0] / "allure-results", {p.key: list(p.values) for p in result.params},
                               result.swept, result.table(), result.recommendation(), result.plot,
                               result.started_ms, passed=bool(result.points))


class CalibrationReports:
    """Each calibration run's Allure results, as ``run`` writes them; no sweep plot or sweep result."""

    def __init__(self, log=None) -> None:
        self.log = log or (lambda m: print(f"mirrordrill calibrate: {m}", file=sys.stderr, flush=True))

    def record_point(self, run_dir: Path, combo: dict, point) -> None:
        from mirrordrill.reports.allure_results import record_allure_results
        record_allure_results(run_dir, self.log)

    def draw_plot(self, result) -> Path | None:
        return None

    def write_allure(self, result) -> None:
        return None
