"""From observed figures to suggested limits: pure logic, no drill is run here.

A limit is the worst run plus a stated margin (``worst x (1 + margin)``; for figures where more
is better, ``worst x (1 - margin)``), plus a floor of slack on timings, rounded to two
significant figures in the lenient direction. A count that was 0 in every run stays ``0``: a
margin on nothing lost would let a replicator start losing records.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from mirrordrill.harness.drill.metrics import Family, Metric, metrics_of
from mirrordrill.harness.drill.results import DrillSummary


class CalibrationError(ValueError):
    """A calibration that cannot run (bad --margin, --runs, no run measured); the message says what is valid."""


def calibrated(family: Family) -> tuple[Metric, ...]:
    """The family's metrics calibrate shows (those with a rule in the catalogue), where less is
    better first: counts and timings, then the floors (acked, throughput)."""
    return tuple(sorted((m for m in metrics_of(family) if m.calibrate is not None), key=lambda m: m.higher_is_better))


def parse_margin(text: str) -> float:
    """``50%`` or ``0.5`` -> 0.5; CalibrationError otherwise."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(%?)\s*", str(text))
    value = (float(m.group(1)) / 100 if m.group(2) else float(m.group(1))) if m else None
    if value is None or not 0 <= value < 1:
        raise CalibrationError(f"--margin {text!r}: give a fraction below 1 or a percentage below 100% "
                               f"(e.g. 50% or 0.5: limits 50% above the worst run)")
    return value


@dataclass(frozen=True)
class Limit:
    op: str  # "==", "<=", ">="
    value: float

    def yaml_value(self) -> str:
        """As an expectation's value: ``0`` for a count that must stay zero, else the operator written out."""
        if self.op == "==" and self.value == 0:
            return "0"
        return f'"{self.op} {_fmt(self.value)}"'


def _fmt(v: float) -> str:
    return str(int(v)) if v == int(v) else f"{v:g}"


def _two_figures(v: float, up: bool) -> float:
    """``v`` rounded to two significant figures, up or down (14807 -> 15000 up, 98.7 -> 98 down)."""
    if v <= 0:
        return 0.0
    step = 10 ** (math.floor(math.log10(v)) - 1)
    n = v / step
    n = math.ceil(n - 1e-9) if up else math.floor(n + 1e-9)
    return round(n * step, 10)


def suggest(kind: Metric, values: list[float | None], margin: float) -> Limit | None:
    """The limit for ``kind`` given what the runs measured (``None``: nothing was measured)."""
    seen = [v for v in values if v is not None]
    if not seen:
        return None
    if kind.higher_is_better:
        limit = _two_figures(min(seen) * (1 - margin), up=False)
        return Limit(">=", math.floor(limit) if kind.count else limit)
    worst = max(seen)
    if kind.count and worst == 0:
        return Limit("==", 0)
    limit = _two_figures(worst * (1 + margin) + (kind.calibrate.slack if kind.calibrate else 0.0), up=True)
    return Limit("<=", math.ceil(limit) if kind.count else limit)


@dataclass
class Observed:
    """One metric of one flow, group or failback, over the runs (``None`` where a run measured nothing)."""

    kind: Metric
    scope: str
    values: list[float | None] = field(default_factory=list)

    def key(self, scoped: bool) -> str:
        return f"{self.kind.name}[{self.scope}]" if scoped else self.kind.name

    def spread(self) -> tuple[float | None, float | None, float | None]:
        seen = [v for v in self.values if v is not None]
        return (min(seen), statistics.median(seen), max(seen)) if seen else (None, None, None)


def observe(summaries: list[DrillSummary]) -> list[Observed]:
    """Every metric per flow, failed-over group and failback, in the order the summaries list them.

    A group that moves twice (a failover and a switch back) gives both moves' figures: its
    expectation applies to each, so the limit must hold for the worse."""
    table: dict[tuple[str, str], Observed] = {}

    def add(kind: Metric, scope: str, run: int, value) -> None:
        o = table.setdefault((kind.name, scope), Observed(kind, scope, [None] * len(summaries)))
        if value is not None:
            o.values[run] = value if o.values[run] is None else (
                min(o.values[run], value) if kind.higher_is_better else max(o.values[run], value))

    for run, s in enumerate(summaries):
        sections: tuple[tuple[Family, Sequence[tuple[str, object]]], ...] = (
            ("flow", [(f.name, f) for f in s.flows]),
            ("failover", [(g.group, g) for g in s.failovers]),
            ("failback", [(b.name, b) for b in s.failbacks]))
        for family, entries in sections:
            for scope, entry in entries:
                for kind in calibrated(family):
                    add(kind, scope, run, kind.read(entry))
    return list(table.values())


@dataclass(frozen=True)
class Calibration:
    """What ``calibrate`` prints: the header line, the ranges, and the expectations to paste."""

    header: str
    observed: list[Observed]
    margin: float

    def _is_scoped(self, o: Observed) -> bool:
        """Keys name their flow, group or failback only when the drill has several of that kind."""
        return len({x.scope for x in self.observed if x.kind.family == o.kind.family}) > 1

    def expectations_yaml(self) -> str:
        lines = [self.header, "expectations:"]
        for o in self.observed:
            limit = suggest(o.kind, o.values, self.margin)
            if limit is None or o.kind.calibrate is None or not o.kind.calibrate.suggested:
                continue
            lines.append(f"  {o.key(self._is_scoped(o))}: {limit.yaml_value()}")
        return "\n".join(lines) + "\n"

    def to_json(self) -> dict:
        """The ranges and suggested limits as data (a measurement record's figures)."""
        observed = []
        for o in self.observed:
            rule = o.kind.calibrate
            limit = suggest(o.kind, o.values, self.margin) if rule is not None and rule.suggested else None
            observed.append({"metric": o.key(True), "values": o.values,
                             "suggested": None if limit is None else f"{limit.op} {_fmt(limit.value)}"})
        return {"header": self.header, "margin": self.margin, "observed": observed}

    def range_table(self) -> str:
        runs = max((len(o.values) for o in self.observed), default=0)
        head = f"  {'metric':<44}" + "".join(f"{'run ' + str(i + 1):>10}" for i in range(runs))
        lines = [head + f"{'min':>10}{'median':>10}{'max':>10}  suggested"]
        for o in self.observed:
            limit = suggest(o.kind, o.values, self.margin)
            suggested = o.kind.calibrate is not None and o.kind.calibrate.suggested  # every observed metric has one
            shown = ("-" if limit is None else f"{limit.op} {_fmt(limit.value)}") if suggested else \
                "(shown only: too noisy to limit)"
            cells = "".join(f"{_cell(v):>10}" for v in o.values)
            lo, mid, hi = o.spread()
            lines.append(f"  {o.key(True):<44}{cells}{_cell(lo):>10}{_cell(mid):>10}{_cell(hi):>10}  {shown}")
        return "\n".join(lines)


def _cell(v) -> str:
    if v is None:
        return "-"
    return f"{v:.1f}" if isinstance(v, float) and v != int(v) else f"{v:g}"
