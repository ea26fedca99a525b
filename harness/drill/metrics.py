"""The metric catalogue: every figure a drill file's expectations may name, declared once.

Each ``Metric`` says what it is (name, unit, which summary entries it is read from, which way is
better, whether it counts records) and how each tool treats it: calibrate's rule (``calibrate``),
the baseline's tolerance (``baseline``), the bench's column (``bench``). The drill file's model,
the judging of expectations, calibrate, the baseline and the bench all read this table, so a new
metric is one ``register_metric(Metric(...))`` (with ``read`` when it is not a field of the summary).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

Family = Literal["flow", "failover", "failback"]  # summary.json's flows, failovers, failbacks

LATENCY_SLACK_MS = 100.0  # calibrate: timer noise on a shared machine, added to a ceiling
DURATION_SLACK_S = 1.0


@dataclass(frozen=True)
class CalibrateRule:
    """How calibrate limits the metric: the worst run plus the margin, plus ``slack`` in its unit."""

    slack: float = 0.0
    suggested: bool = True  # False: shown in the range table only (too noisy to limit)


@dataclass(frozen=True)
class BenchColumn:
    """The metric as a column of the bench's table: one figure per run, over its flows or groups."""

    figure: str  # the figure's key in the bench's runs (latency_p99_ms)
    heading: str
    digits: int
    # over flows or groups: "sum" (records, rates) or the "worst" one (latencies, RTO); a group
    # that moves twice counts once, at its worse move (the checker reports its whole history in each)
    combine: Literal["sum", "worst"] = "sum"


@dataclass(frozen=True)
class Metric:
    name: str  # as the drill file writes it: latency_ms.p99, failover.rto_s
    unit: str  # records, ms, s, records/s, MB/s
    family: Family = "flow"
    higher_is_better: bool = False  # a bare number is then ambiguous, and a floor is what limits it
    count: bool = False  # counts records: whole-number limits, summed over flows or groups
    calibrate: CalibrateRule | None = CalibrateRule()  # None: calibrate does not show it
    baseline: str | None = None  # the baseline's tolerance that applies (latency, rto, ...); None: not compared
    bench: BenchColumn | None = None
    # How it is read from one entry of its family (a flow, a failed-over group, a failback);
    # None: the summary's field of the same name, dotted into nested objects (latency_ms.p99).
    reader: Callable[[Any], float | None] | None = None

    @property
    def field(self) -> str:
        return self.name.removeprefix(f"{self.family}.") if self.family != "flow" else self.name

    def read(self, entry: Any) -> float | None:
        """Its value in one summary entry (None: not measured)."""
        if self.reader is not None:
            return self.reader(entry)
        value: Any = entry.model_dump(by_alias=True)
        for part in self.field.split("."):
            if not isinstance(value, dict):
                return None
            value = value.get(part)
        return value


def _latency(p: str, *, suggested: bool = True, baseline: bool = True, bench: bool = False) -> Metric:
    column = BenchColumn(f"latency_{p}_ms", f"{p} ms", 0, "worst") if bench else None
    return Metric(f"latency_ms.{p}", "ms", calibrate=CalibrateRule(LATENCY_SLACK_MS, suggested),
                  baseline="latency" if baseline else None, bench=column)


def _records(name: str, family: Family = "flow", **facts: Any) -> Metric:
    return Metric(name, "records", family, count=True, **facts)


BUILT_IN: tuple[Metric, ...] = (
    _records("acked", higher_is_better=True),
    _records("replicated", higher_is_better=True, calibrate=None),
    _records("lost"),
    _records("duplicates", bench=BenchColumn("duplicates", "duplicates", 0)),
    _records("reordered"),
    # copies in another partition number than their source record's (MirrorMaker 1 repartitions)
    _records("misplaced", calibrate=None),
    _records("corrupted"),
    _records("unexpected"),
    _latency("p50", bench=True),
    _latency("p90", suggested=False),
    _latency("p99", bench=True),
    _latency("max", suggested=False, baseline=False),
    Metric("throughput_records_s", "records/s", higher_is_better=True, baseline="throughput",
           bench=BenchColumn("throughput_records_s", "records/s", 0)),
    Metric("throughput_mb_s", "MB/s", higher_is_better=True, calibrate=None),
    # the longest time a source partition held uncopied records while no copy arrived
    Metric("stall_s", "s", calibrate=CalibrateRule(DURATION_SLACK_S), baseline="stall",
           bench=BenchColumn("stall_s", "stall s", 1, "worst")),
    _records("failover.skipped", "failover"),
    _records("failover.reprocessed", "failover", baseline="reprocessed",
             bench=BenchColumn("reprocessed", "reprocessed", 0)),
    Metric("failover.rto_s", "s", "failover", calibrate=CalibrateRule(DURATION_SLACK_S), baseline="rto",
           bench=BenchColumn("rto_s", "RTO s", 1, "worst")),
    _records("failover.rpo_records", "failover"),
    _records("failback.missing", "failback"),
    _records("failback.extra", "failback"),
    Metric("failback.converge_s", "s", "failback", calibrate=CalibrateRule(DURATION_SLACK_S)),
    _records("failback.history_records", "failback", higher_is_better=True),
)

_metrics: dict[str, Metric] = {m.name: m for m in BUILT_IN}
METRICS: Mapping[str, Metric] = MappingProxyType(_metrics)  # a read-only view that follows registration


def register_metric(metric: Metric) -> None:
    """Add a metric the drill file's expectations may name; TypeError when the name is taken."""
    if metric.name in _metrics:
        raise TypeError(f"metric {metric.name!r} is registered already")
    if metric.family != "flow" and not metric.name.startswith(f"{metric.family}."):
        raise TypeError(f"a {metric.family} metric is named {metric.family}.<name>, not {metric.name!r}")
    _metrics[metric.name] = metric


def unregister_metric(name: str) -> None:
    """Take a registered metric away again (the built-in ones stay)."""
    if name not in {m.name for m in BUILT_IN}:
        _metrics.pop(name, None)


def metric_names() -> tuple[str, ...]:
    """Every metric's name: flows' first, then failovers', then failbacks' (as an error lists them)."""
    order: tuple[Family, ...] = ("flow", "failover", "failback")
    return tuple(m.name for family in order for m in _metrics.values() if m.family == family)


def metrics_of(family: Family) -> tuple[Metric, ...]:
    return tuple(m for m in _metrics.values() if m.family == family)
