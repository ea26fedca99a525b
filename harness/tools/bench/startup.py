"""``mirrordrill bench startup``: how long each drill's lab takes to start and stop, on both backends.

A drill's start-up on the docker backend is the part that differs from local processes
(containers made by the engine instead of JVMs forked by the harness); the replicator and the
load are host processes either way. So this starts and stops each drill's topology (its
clusters, brokers, security and WAN links, exactly as ``run`` makes them) with nothing on top,
on each backend in turn, N rounds: processes, docker, processes, docker, ... so a busy spell of
a shared machine hits one start of each rather than all starts of one. It prints the medians
side by side and saves every sample (``startup.json``) and the table (``startup.md``).
"""

from __future__ import annotations

import json
import shutil
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from mirrordrill.harness.drill import run_folder
from mirrordrill.harness.drill.topology import topology_of
from mirrordrill.harness.drill.validate import load_scenario
from mirrordrill.harness.lab.compose.backend import make_backend
from mirrordrill.harness.lab.environment import Environment
from mirrordrill.harness.tools.calibrate.run import machine
from mirrordrill.harness.tools.sweep.measure import fmt_load, load_avg
from mirrordrill.primitives.config_refs import RefResolver

BACKENDS = ("processes", "docker")


@dataclass
class StartupSample:
    drill: str
    backend: str
    round: int
    start_s: float | None  # the environment's own start-up report: clusters usable, WAN links made
    stop_s: float | None  # every process and container stopped and removed
    load_at_start: str
    error: str | None = None


@dataclass
class StartupBench:
    out_dir: Path
    runs: int
    backends: tuple[str, ...]
    samples: list[StartupSample] = field(default_factory=list)
    machine: str = field(default_factory=machine)
    started: str = field(default_factory=lambda: datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))

    def median(self, drill: str, backend: str, what: str) -> float | None:
        values = [getattr(s, what) for s in self.samples
                  if s.drill == drill and s.backend == backend and s.error is None and getattr(s, what) is not None]
        return statistics.median(values) if values else None

    def markdown(self) -> str:
        drills = list(dict.fromkeys(s.drill for s in self.samples))
        head = " | ".join(f"{b} start s | {b} stop s" for b in self.backends)
        lines = [f"Lab start-up and tear-down, median of {self.runs} round(s) per backend, backends alternating; "
                 f"{self.started}, {self.machine}, load {fmt_load(load_avg())} at the end.",
                 "", f"| drill | {head} | failed starts |", "|---" * (1 + 2 * len(self.backends)) + "|---|"]
        def fmt(v: float | None) -> str:
            return "-" if v is None else f"{v:.1f}"

        for d in drills:
            cells = " | ".join(f"{fmt(self.median(d, b, 'start_s'))} | {fmt(self.median(d, b, 'stop_s'))}"
                               for b in self.backends)
            failed = [f"{s.backend} round {s.round}: {s.error}" for s in self.samples if s.drill == d and s.error]
            lines.append(f"| {d} | {cells} | {'; '.join(failed) or 0} |")
        return "\n".join(lines)

    def to_json(self) -> dict:
        """What startup.json holds, and a measurement record's figures."""
        return {"started": self.started, "machine": self.machine, "runs": self.runs,
                "backends": list(self.backends), "samples": [asdict(s) for s in self.samples]}

    def save(self) -> tuple[Path, Path]:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        js, md = self.out_dir / "startup.json", self.out_dir / "startup.md"
        js.write_text(json.dumps(self.to_json(), indent=2))
        md.write_text(self.markdown() + "\n")
        return js, md


def start_and_stop(drill: Path, backend: str, workdir: Path, log: Callable[[str], None]) -> tuple[float, float]:
    """Start the drill's topology on ``backend`` as ``run`` would, stop it; (start-up s, tear-down s)."""
    scenario = load_scenario(drill)
    if scenario.existing_clusters():
        raise ValueError(f"{drill} drills existing clusters: the harness starts none of their brokers")
    env = Environment(topology_of(scenario), workdir, log=log, refs=RefResolver(base_dir=drill.parent),
                      backend=make_backend(backend, scenario.name, log))
    try:
        env.start()
        start_s = env.startup.total_s
    finally:
        t0 = time.monotonic()
        problems = env.stop()
    if problems:
        raise RuntimeError(f"stopping left problems: {'; '.join(problems)}")
    return start_s, time.monotonic() - t0


def bench_startup(files: list[Path], runs: int, out_dir: Path, backends: tuple[str, ...] = BACKENDS,
                  log: Callable[[str], None] = print) -> StartupBench:
    if runs < 1:
        raise ValueError(f"--runs must be at least 1, not {runs}")
    run_folder.take(out_dir, "mirrordrill bench startup")  # its lab folders are deleted after each start
    bench = StartupBench(out_dir, runs, tuple(backends))
    for drill in files:
        for r in range(1, runs + 1):
            for backend in backends:
                sample = StartupSample(drill.stem, backend, r, None, None, fmt_load(load_avg()))
                workdir = out_dir / f"{drill.stem}-{backend}-{r}"
                try:
                    sample.start_s, sample.stop_s = start_and_stop(drill, backend, workdir, lambda m: None)
                    shutil.rmtree(workdir, ignore_errors=True)  # a failed start keeps its broker logs
                except KeyboardInterrupt:
                    bench.save()  # what was measured so far is kept
                    raise
                except Exception as e:  # noqa: BLE001 - one failed start is a figure of the table, not the end
                    sample.error = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:200]
                bench.samples.append(sample)
                log(f"{drill.stem} on {backend}, round {r}: start {_s(sample.start_s)}, stop {_s(sample.stop_s)}"
                    + (f", FAILED {sample.error}" if sample.error else ""))
    return bench


def _s(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.1f} s"
