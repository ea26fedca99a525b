"""The answer a drill report opens on: each run's verdict and headline figures as Allure 3 metrics.

Allure 3.18 reads ``*-perf.json`` files beside test results as performance metrics and shows
them in its Metrics section: one table per metric group, a row per metric key, with its unit
and, from the history file, the change since the previous report (Delta) and a trend. A drill
report opens on that section, so the first screen holds:

- a "Verdict" table: one row per run, ``scenario [replicator]: PASSED`` (or FAILED with the
  violated expectations and their actual values), its value the number of violations;
- one table per flow: lost, duplicates, p50 and p99 latency, a row per figure and run, the
  runs' rows of one figure side by side (replicator against replicator);
- one table per failed-over consumer group: RTO, RPO (records and window), skipped, reprocessed.

Keys name scenario, flow or group, figure and replicator, never the run folder, so the next
quarter's run of the same drill extends the same row's trend. Figures come from the saved
summary (``harness.drill.results``); nothing is re-checked here.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mirrordrill.harness.drill.results import DrillResults, FlowSummary

PERF_FILE = "mirrordrill-headline-perf.json"
# Shown in the report's title, the first thing on every screen of it.
_LISTED_VIOLATIONS = 3


@dataclass(frozen=True)
class Figure:
    """One headline figure: its row title, unit, which direction is better, and how to read it."""

    title: str
    unit: str
    better: str  # "lower" or "higher", as Allure colours the delta

    def row(self, label: str) -> str:
        return f"{self.title} · {label}"


_FLOW_FIGURES: tuple[tuple[Figure, str], ...] = (
    (Figure("lost", "records", "lower"), "lost"),
    (Figure("duplicates", "records", "lower"), "duplicates"),
    (Figure("p50 latency", "ms", "lower"), "p50"),
    (Figure("p99 latency", "ms", "lower"), "p99"),
)
_FAILOVER_FIGURES: tuple[tuple[Figure, str], ...] = (
    (Figure("RTO", "s", "lower"), "rto_s"),
    (Figure("RPO", "records", "lower"), "rpo_records"),
    (Figure("RPO window", "s", "lower"), "rpo_window_s"),
    (Figure("skipped", "records", "lower"), "skipped"),
    (Figure("reprocessed", "records", "lower"), "reprocessed"),
)


def verdict_word(run: DrillResults) -> str:
    """PASSED, FAILED, INTERRUPTED, or ERROR (the drill stopped before it could be judged)."""
    if run.summary.error:
        return "ERROR"
    return (run.summary.verdict or ("passed" if run.passed else "failed")).upper()


def verdict_line(run: DrillResults, label: str | None = None) -> str:
    """``scenario [replicator]: FAILED: lost[a->b] == 0 (actual 3)``: the verdict and why."""
    head = f"{run.name} [{label or run.replicator}]: {verdict_word(run)}"
    if run.summary.error:
        return f"{head}: {run.summary.error}"
    violated = [e for e in run.summary.expectations if not e.passed and not e.relaxed]
    reasons = [f"{e.name} (actual {e.actual})" for e in violated[:_LISTED_VIOLATIONS]]
    if len(violated) > _LISTED_VIOLATIONS:
        reasons.append(f"and {len(violated) - _LISTED_VIOLATIONS} more")
    # A failover table can show no RTO for applications that never resumed (Allure takes numbers
    # only): the verdict says so, whatever the expectations asked.
    reasons += [f"consumer group {fo.group} never resumed on {fo.dr}" for fo in run.summary.failovers
                if fo.rto_s is None]
    return f"{head}: {'; '.join(reasons)}" if reasons else head


def run_labels(runs: list[DrillResults]) -> list[str]:
    """What tells the runs apart in a row: the replicator, and the run folder when two runs of
    one drill with one replicator are in the same report."""
    seen = Counter((r.name, r.replicator) for r in runs)
    return [r.replicator if seen[(r.name, r.replicator)] == 1 or r.run_dir is None
            else f"{r.replicator} {r.run_dir.name}" for r in runs]


def headline_metrics(runs: list[DrillResults]) -> list[dict[str, Any]]:
    """The runs' verdicts and headline figures as Allure 3 metric samples (``*-perf.json`` entries)."""
    several_drills = len({r.name for r in runs}) > 1
    out = []
    for run, label in zip(runs, run_labels(runs), strict=True):
        start = run.started_ms
        stop = start + int(run.summary.duration_s * 1000)
        for key, title, value, figure, group, group_title in _samples(run, label, several_drills):
            if value is None:
                continue  # not measured (no latency sample, applications that never resumed)
            out.append({"id": f"{key}@{label}", "key": key, "value": value, "start": start, "stop": stop,
                        "title": title, "unit": figure.unit, "better": figure.better,
                        "group": group, "groupTitle": group_title})
    return out


_Sample = tuple[str, str, float | int | None, Figure, str, str]


def _samples(run: DrillResults, label: str, several_drills: bool) -> Iterator[_Sample]:
    # Allure orders rows, and the tables they make, by key: the numbered parts put the verdict
    # first, then flows, then failovers, each figure's rows of all runs together.
    violations = sum(1 for e in run.summary.expectations if not e.passed and not e.relaxed)
    yield (f"1 verdict|{run.name}|{label}", verdict_line(run, label), violations,
           Figure("verdict", "violated", "lower"), "verdict", "Verdict")
    prefix = f"{run.name}: " if several_drills else ""
    for flow in run.summary.flows:
        group = f"flow {run.name} {flow.name}"
        for i, (figure, field) in enumerate(_FLOW_FIGURES):
            yield (f"2 flow|{run.name}|{flow.name}|{i} {figure.title}|{label}", figure.row(label),
                   _flow_figure(flow, field), figure, group, f"{prefix}flow {flow.name}")
    for fo in run.summary.failovers:
        group = f"failover {run.name} {fo.group} {fo.strategy}"
        title = f"{prefix}failover of consumer group {fo.group} ({fo.strategy}, {fo.primary}->{fo.dr})"
        for i, (figure, field) in enumerate(_FAILOVER_FIGURES):
            yield (f"3 failover|{run.name}|{fo.group}|{fo.strategy}|{i} {figure.title}|{label}", figure.row(label),
                   getattr(fo, field), figure, group, title)


def _flow_figure(flow: FlowSummary, field: str) -> float | int | None:
    return getattr(flow.latency_ms, field) if field in ("p50", "p99") else getattr(flow, field)


def write_headline(runs: list[DrillResults], folder: Path) -> Path:
    """The runs' headline metrics as an Allure results file in ``folder``; returns its path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / PERF_FILE
    path.write_text(json.dumps(headline_metrics(runs), indent=1))
    return path
