"""A drill compared with an earlier run of it (``mirrordrill run FILE --baseline DIR``).

Absolute limits catch a broken replicator; a baseline catches a slower one: p99 from 80 ms to
900 ms, an RTO that doubled, twice the records reprocessed, a third less throughput, while every
limit in the file still holds. Each comparison becomes an expectation row of the new run
(``baseline: latency_ms.p99[primary->dr] <= 240``), so the verdict, the exit code, summary.json
and the Allure report all carry it; ``baseline.json`` in the run folder keeps the whole table.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from mirrordrill.harness.drill.metrics import METRICS, Family, Metric, metrics_of
from mirrordrill.harness.drill.results import (
    DrillSummary,
    ExpectationRow,
    FailoverSummary,
    FlowSummary,
    ResultsUnavailable,
    load_results,
)
from mirrordrill.harness.drill.run_folder import BASELINE_FILE, SCENARIO_COPY, SUMMARY_FILE


class BaselineError(ValueError):
    """A baseline that cannot be used (missing, unreadable, another drill, a bad --tolerance)."""


@dataclass(frozen=True)
class Tolerance:
    """How much worse than the baseline still passes: ``relative`` (0.5 = 50% worse) plus
    ``slack`` in the metric's own unit, so a 40 ms p50 does not fail at 61 ms on a busy machine."""

    relative: float
    slack: float = 0.0

    def ceiling(self, base: float) -> float:
        return base * (1 + self.relative) + self.slack

    def floor(self, base: float) -> float:
        return max(0.0, base * (1 - self.relative) - self.slack)

    def describe(self, unit: str) -> str:
        slack = f" + {self.slack:g} {unit}" if self.slack else ""
        return f"{self.relative:.0%}{slack}"


# Default tolerances: wide enough for run-to-run noise on a shared 2-core machine, tight enough to
# catch a replicator that got slower. Measured on the quickstart (pyspark, real-time mode): p99
# 9805 -> 10394 ms between two runs, p50 75 -> 240 ms when the second ran at load average 19 (other
# drills beside it): the slack covers a busy machine, the percentage a real regression
# (micro-batch mode's p50 is ~1.4 s).
DEFAULT_TOLERANCES: dict[str, Tolerance] = {
    "latency": Tolerance(0.5, 250.0),      # ms; p50, p90, p99
    "rto": Tolerance(0.5, 2.0),            # s
    "stall": Tolerance(0.5, 2.0),          # s, as the RTO: both time a restart
    "reprocessed": Tolerance(0.2, 10.0),   # records
    "throughput": Tolerance(0.2, 0.0),     # records/s, a floor
}
_SPEC = re.compile(r"^\s*(?:(\d+(?:\.\d+)?)%)?\s*(?:\+\s*(\d+(?:\.\d+)?))?\s*$")


def parse_tolerances(specs: list[str] | None) -> dict[str, Tolerance]:
    """``["latency=30%+50", "rto=100%", "throughput=10%"]`` over the defaults; BaselineError says what is valid."""
    out = dict(DEFAULT_TOLERANCES)
    for spec in specs or []:
        key, eq, value = spec.partition("=")
        key = key.strip()
        m = _SPEC.match(value) if eq else None
        if key not in out or not m or (m.group(1) is None and m.group(2) is None):
            raise BaselineError(f"--tolerance {spec!r}: write KEY=PERCENT%[+SLACK] with KEY one of "
                                f"{', '.join(out)} (e.g. latency=50%+100: 50% worse plus 100 ms; "
                                f"throughput=20%: at most 20% less)")
        out[key] = Tolerance(float(m.group(1) or 0) / 100, float(m.group(2) or 0))
    return out


@dataclass(frozen=True)
class Comparison:
    """One figure of the new run against the same figure of the baseline."""

    metric: str  # an expectation metric name (latency_ms.p99, failover.rto_s, ...)
    scope: str  # the flow or consumer group
    baseline: float | None
    actual: float | None
    op: str  # "<=" or ">="
    limit: float | None
    passed: bool
    note: str = ""

    @property
    def name(self) -> str:
        limit = f" {self.op} {_num(self.limit)}" if self.limit is not None else ""
        return f"baseline: {self.metric}[{self.scope}]{limit}"


@dataclass
class BaselineComparison:
    """The whole comparison, as saved in ``baseline.json``."""

    source: str
    baseline_scenario: str
    baseline_replicator: str
    baseline_started_at: str
    tolerances: dict[str, dict]
    rows: list[Comparison] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.rows)

    def expectation_rows(self) -> list[ExpectationRow]:
        """The regressions as expectations: they decide the verdict like the file's own limits."""
        return [ExpectationRow(name=r.name, passed=r.passed, actual=r.actual, limit=r.limit, op=r.op,
                               note=r.note or None) for r in self.rows if r.limit is not None or not r.passed]

    def table(self) -> str:
        head = (f"compared with the baseline {self.source} ({self.baseline_scenario} with "
                f"{self.baseline_replicator}, {self.baseline_started_at}); tolerances: "
                + ", ".join(f"{k} {Tolerance(**v).describe(_unit_of(k))}" for k, v in self.tolerances.items()))
        lines = [head, f"  {'metric':<38}{'baseline':>10}{'now':>10}{'change':>9}{'allowed':>12}  verdict"]
        for r in self.rows:
            change = (f"{(r.actual - r.baseline) / r.baseline:+.0%}" if r.baseline and r.actual is not None else "-")
            allowed = f"{r.op} {_num(r.limit)}" if r.limit is not None else "-"
            verdict = "ok" if r.passed else "REGRESSED"
            lines.append(f"  {r.metric + '[' + r.scope + ']':<38}{_num(r.baseline):>10}{_num(r.actual):>10}"
                         f"{change:>9}{allowed:>12}  {verdict}{'  (' + r.note + ')' if r.note else ''}")
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    def to_json(self) -> dict:
        doc = asdict(self)
        doc["passed"] = self.passed
        doc["table"] = self.table()
        return doc

    def save(self, run_dir: Path) -> Path:
        path = Path(run_dir) / BASELINE_FILE
        path.write_text(json.dumps(self.to_json(), indent=2))
        return path


def _num(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:g}" if abs(v) < 1e6 else f"{v:.0f}"


# --------------------------------------------------------------------------- loading


def load_baseline(path: Path) -> DrillSummary:
    """A previous run's folder, or a saved summary.json (any file name), read through harness.drill.results."""
    path = Path(path)
    try:
        if path.is_dir():
            return load_results(path).summary
        if path.is_file():
            # load_results reads a folder's summary.json; a summary saved elsewhere gets one of its own
            with tempfile.TemporaryDirectory() as d:
                shutil.copyfile(path, Path(d) / SUMMARY_FILE)
                return load_results(Path(d)).summary
    except ResultsUnavailable as e:
        raise BaselineError(f"--baseline {path}: {e}") from None
    raise BaselineError(f"--baseline {path}: no such file or folder; give a previous run's folder "
                        f"(runs/<scenario>-<replicator>-<time>) or its summary.json")


def _same_content(drill_file: Path, baseline_copy: Path) -> bool:
    """The same drill written differently (a sweep or calibration run rewrites the file it runs)."""
    try:
        return yaml.safe_load(drill_file.read_text()) == yaml.safe_load(baseline_copy.read_text())
    except (OSError, yaml.YAMLError):
        return False


def check_same_drill(baseline: DrillSummary, scenario_name: str, replicator: str, drill_file: Path,
                     baseline_copy: Path | None = None) -> list[str]:
    """BaselineError for another drill; warnings when the replicator or the drill's content differ.
    ``baseline_copy``: the baseline run's scenario.yaml, when it is at hand."""
    if baseline.scenario != scenario_name:
        raise BaselineError(f"the baseline is a run of drill {baseline.scenario!r}, not {scenario_name!r}: "
                            f"give a run folder of {scenario_name!r} (its summary.json names the drill)")
    warnings = []
    if baseline.replicator != replicator:
        warnings.append(f"the baseline ran {baseline.replicator}, this run {replicator}: the comparison is "
                        f"between replicators, not a regression of one")
    drill_sha256 = hashlib.sha256(Path(drill_file).read_bytes()).hexdigest()
    if (baseline.drill_sha256 and baseline.drill_sha256 != drill_sha256
            and not (baseline_copy is not None and _same_content(Path(drill_file), baseline_copy))):
        warnings.append("the drill file changed since the baseline run (its SHA-256 differs): a changed load or "
                        "timeline changes the figures too")
    if baseline.interrupted or baseline.error:
        warnings.append("the baseline run was interrupted or failed: its figures cover only part of a drill")
    return warnings


# --------------------------------------------------------------------------- comparing

def _compared(family: Family) -> list[tuple[Metric, str]]:
    """The family's metrics the catalogue gives a tolerance, each with the tolerance's name, in their order."""
    order = list(DEFAULT_TOLERANCES)
    pairs = [(m, m.baseline) for m in metrics_of(family) if m.baseline is not None and m.baseline in order]
    return sorted(pairs, key=lambda pair: order.index(pair[1]))


def _unit_of(tolerance: str) -> str:
    return next((m.unit for m in METRICS.values() if m.baseline == tolerance), "")


def compare(baseline: DrillSummary, flows: list[FlowSummary], failovers: list[FailoverSummary],
            tolerances: dict[str, Tolerance]) -> list[Comparison]:
    """Every compared figure: flow latencies and throughput, each failed-over group's RTO and reprocessed."""
    rows: list[Comparison] = []
    now_flows = {f.name: f for f in flows}
    for base in baseline.flows:
        new = now_flows.get(base.name)
        rows += [_judge(m.name, base.name, m.read(base), m.read(new) if new else None, tolerances[tolerance],
                        new is None, higher_is_worse=not m.higher_is_better) for m, tolerance in _compared("flow")]
    now_groups = _by_group(failovers)
    for key, base_group in _by_group(baseline.failovers).items():
        new_group = now_groups.get(key)
        rows += [_judge(m.name, _group_scope(key), m.read(base_group), m.read(new_group) if new_group else None,
                        tolerances[tolerance], new_group is None, higher_is_worse=not m.higher_is_better)
                 for m, tolerance in _compared("failover")]
    return rows


def _by_group(failovers: list[FailoverSummary]) -> dict[tuple[str, str, str, int], FailoverSummary]:
    """Groups by name, strategy and move; a group moved twice (failover, switch back) keeps both, in order."""
    out: dict[tuple[str, str, str, int], FailoverSummary] = {}
    for f in failovers:
        n = sum(1 for k in out if k[:3] == (f.group, f.strategy, f"{f.primary}->{f.dr}"))
        out[(f.group, f.strategy, f"{f.primary}->{f.dr}", n)] = f
    return out


def _group_scope(key: tuple[str, str, str, int]) -> str:
    group, strategy, move, n = key
    return f"{group} ({strategy}, {move}{f', #{n + 1}' if n else ''})"


def _missing(metric: str, scope: str, base: float | None, op: str) -> Comparison:
    """A figure with nothing to compare: none in the baseline, or its flow or group gone from this run."""
    if base is None:
        return Comparison(metric, scope, None, None, op, None, True, "nothing measured in the baseline")
    return Comparison(metric, scope, base, None, op, None, False, "in the baseline, not measured in this run")


def _judge(metric: str, scope: str, base: float | None, now: float | None, tol: Tolerance, gone: bool,
           higher_is_worse: bool = True) -> Comparison:
    """One figure against its baseline: a ceiling when more is worse (latency, RTO), a floor when less is
    (throughput), each rounded in the lenient direction."""
    op = "<=" if higher_is_worse else ">="
    if base is None or gone:
        return _missing(metric, scope, base, op)
    limit = _round_limit(tol.ceiling(base) if higher_is_worse else tol.floor(base), up=higher_is_worse)
    if now is None:
        return Comparison(metric, scope, base, None, op, limit, False, "measured in the baseline, not now")
    return Comparison(metric, scope, base, now, op, limit, now <= limit if higher_is_worse else now >= limit)


def _round_limit(v: float, up: bool) -> float:
    """Limits to 0.1 of their unit, rounded in the lenient direction: what the table shows is what was judged."""
    scaled = v * 10
    return (math.ceil(scaled - 1e-9) if up else math.floor(scaled + 1e-9)) / 10


@dataclass(frozen=True)
class BaselineCheck:
    """What ``run --baseline`` hands the engine: the baseline read and checked before the drill starts."""

    source: Path
    summary: DrillSummary
    tolerances: dict[str, Tolerance]
    warnings: tuple[str, ...] = ()

    @classmethod
    def prepare(cls, source: Path, specs: list[str] | None, scenario_name: str, replicator: str,
                drill_file: Path) -> BaselineCheck:
        """Read and vet the baseline (BaselineError before anything starts)."""
        tolerances = parse_tolerances(specs)
        summary = load_baseline(source)
        folder = Path(source) if Path(source).is_dir() else Path(source).parent
        copy = folder / SCENARIO_COPY
        warnings = check_same_drill(summary, scenario_name, replicator, drill_file, copy if copy.is_file() else None)
        return cls(Path(source), summary, tolerances, tuple(warnings))

    def judge(self, flows: list[FlowSummary], failovers: list[FailoverSummary]) -> BaselineComparison:
        b = self.summary
        return BaselineComparison(
            source=str(self.source), baseline_scenario=b.scenario, baseline_replicator=b.replicator,
            baseline_started_at=b.started_at, tolerances={k: asdict(v) for k, v in self.tolerances.items()},
            rows=compare(b, flows, failovers, self.tolerances), warnings=list(self.warnings))
