"""A drill's results, typed: computed once by the engine, saved once, read back by reports and the sweep.

On disk, in the run folder:

- ``summary.json``: :class:`DrillSummary`, the contract of docs/reference/summary-json.md (CI jobs and dashboards
  read its fields, so their names and shapes do not change; ``schema`` versions it);
- ``series/<flow>.json``: per flow, the checker's per-second series (:class:`FlowSeries`);
- ``series/<flow>.latency.csv.gz``: per flow, one line per replicated record (first seen on
  the target, latency), for the latency plots; gzip keeps a million records to a few MB.

Nothing here computes a figure: the checker does (``harness.drill.checker``), the engine assembles.
"""

from __future__ import annotations

import csv
import dataclasses
import gzip
import io
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    WrapSerializer,
    model_serializer,
    model_validator,
)

# a flow's events read back as the checker wrote them (its dataclass, validated by pydantic)
from mirrordrill.harness.drill.checker.contract import EventImpact, FlowSeries, SecondSeries
from mirrordrill.harness.drill.run_folder import SERIES_DIR, SUMMARY_FILE
from mirrordrill.harness.drill.tail_trace import TailTrace
from mirrordrill.loadgen.histories.records import TimelineEvent

SCHEMA = 1


class ResultsUnavailable(Exception):
    """A run folder whose results cannot be read; the message says why and how to re-run the drill."""


class _Model(BaseModel):
    # Unknown keys are ignored, so a summary edited by hand or by a newer patch release still loads.
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class _WithoutAbsentExtras(_Model):
    """A model whose optional extras are left out of the JSON when absent, as the old dicts did."""

    def _drop_when_none(self) -> tuple[str, ...]:
        return ()

    @model_serializer(mode="wrap")
    def _serialize(self, handler):
        out = handler(self)
        for key in self._drop_when_none():
            if out.get(key) is None:
                out.pop(key, None)
        return out


# --------------------------------------------------------------------------- flows


class Latency(_Model):
    """The ``latency_ms`` object: nearest-rank percentiles in milliseconds."""

    p50: int | None
    p90: int | None
    p99: int | None
    max: int | None


class _FlowHead(_Model):
    source: str
    target: str
    topics: list[str]


class Figures(_Model):
    """What a flow, or one topic of it, did (see ``harness.drill.checker.contract.ReplicationFigures``)."""

    acked: int
    replicated: int
    lost: int
    duplicates: int
    reordered: int
    corrupted: int
    unexpected: int
    latency_ms: Latency
    throughput_records_s: float | None
    throughput_mb_s: float | None
    misplaced: int
    uncertain_delivered: int
    source_duplicates: int
    replicated_bytes: int
    latency_count: int
    # Acked, not seen on the target, not known lost: replication had not drained (an interrupted
    # drill) and no later record of the same source partition arrived. 0 in older summaries.
    in_flight: int = 0


class IdSamples(_Model):
    """The first ids of each kind, ``[producer_id, seq]``, for debugging."""

    lost: list[tuple[str, int]]
    duplicates: list[tuple[str, int]]
    reordered: list[tuple[str, int]]
    misplaced: list[tuple[str, int]]
    corrupted: list[tuple[str, int]]
    unexpected: list[tuple[str, int]]
    uncertain_delivered: list[tuple[str, int]]
    in_flight: list[tuple[str, int]] = []


class PartitionStall(_Model):
    """One source partition's longest stall (``harness.drill.checker.stall``)."""

    stall_s: float
    started_ms: int | None  # epoch ms the stall began; None when there was none


class FlowSummary(Figures, _FlowHead, _WithoutAbsentExtras):
    """A flow's entry in summary.json: source, target, topics, figures, then the details.

    (Bases in this order so the JSON keeps its historical key order; ``tail_trace`` only when traced.)
    """

    def _drop_when_none(self) -> tuple[str, ...]:
        return ("tail_trace",)

    # The longest stall over the flow's source partitions, in seconds, and each partition's,
    # keyed ``topic-partition``; None and empty in summaries written before the stall was measured.
    stall_s: float | None = None
    stall_by_partition: dict[str, PartitionStall] = {}
    # run --trace: which step of the path its records, and its slowest 1%, waited in; None when not traced
    tail_trace: TailTrace | None = None
    by_topic: dict[str, Figures]
    samples: IdSamples
    events: list[EventImpact]
    name: str
    via: list[str]

    @classmethod
    def of(cls, checked: Mapping[str, Any], name: str, via: tuple[str, ...] | list[str]) -> FlowSummary:
        """From ``FlowResult.summary()``, the checker's own naming of its figures."""
        return cls.model_validate({**checked, "name": name, "via": list(via)})


# --------------------------------------------------------------------------- failovers, failbacks


class FailoverSummary(_Model):
    """A consumer group's failover cost (``harness.drill.checker.contract.FailoverResult``)."""

    # pylint: disable=duplicate-code  # summary.json's own copy of FailoverResult's fields: a file format, kept apart
    group: str
    strategy: str
    primary: str
    dr: str
    failure_ts_ms: int
    available: int
    processed: int
    skipped: int
    reprocessed: int
    reprocessed_across_failover: int
    rto_s: float | None
    rpo_records: int
    rpo_window_s: float | None
    rpo_first_ack_ts_ms: int | None
    rpo_last_ack_ts_ms: int | None
    skipped_sample: list[tuple[str, int]]
    rpo_sample: list[tuple[str, int]]


class FailbackSummary(_Model):
    """A failback's copy back into the rebuilt old primary (``harness.drill.failback``)."""

    from_: str = Field(alias="from")
    to: str
    name: str
    converged: bool
    topics: int
    records: int
    missing: int | None
    extra: int | None
    converge_s: float | None
    # With ``restore_history``: how many of the compared records are the old primary's own
    # pre-incident records, copied back under their original topic names (missing/extra cover
    # them too). None: history was not restored, and ``history_note`` says why when it was asked for.
    history_records: int | None = None
    history_note: str | None = None


# --------------------------------------------------------------------------- the rest of the drill


class ExpectationRow(_WithoutAbsentExtras):
    """One expectation judged against one flow, group or failback."""

    name: str
    passed: bool
    actual: Any
    limit: int | float | None
    op: str
    note: str | None = None            # why nothing could be judged
    failures: list[str] | None = None  # the failed timeline steps, for the steps row
    invariant: str | None = None       # a built-in invariant's row: its name (no_loss, ...)
    relaxed: str | None = None         # the scenario relaxed that invariant: its reason (not judged)

    def _drop_when_none(self) -> tuple[str, ...]:
        return ("note", "failures", "invariant", "relaxed")


class InvariantOutcome(_Model):
    """One built-in invariant of the drill: whether it applied, and how it came out.

    ``outcome``: ``held``, ``failed``, ``relaxed`` (the scenario gave ``reason``) or
    ``not judged`` (``reason`` says why, e.g. an interrupted drill's load)."""

    name: str
    outcome: str
    reason: str | None = None
    rows: list[str] = []  # the expectation rows (per flow or producer) that judged it


def _no_condition(value: Any) -> Any:
    # the histories and older summaries write "" for "no condition"
    if isinstance(value, Mapping) and value.get("condition") == "":
        return {**value, "condition": None}
    if isinstance(value, TimelineEvent) and value.condition == "":
        return dataclasses.replace(value, condition=None)
    return value


def _without_absent_condition(event: TimelineEvent, handler: SerializerFunctionWrapHandler) -> Any:
    out = handler(event)
    for key in ("condition", "condition_held", "condition_checked_ts_ms"):  # only steps with a ``when``
        if out.get(key) is None:
            out.pop(key, None)
    return out


# A timeline step or a part of one, as the histories recorded it (loadgen's ``TimelineEvent``).
# A step with a ``when`` carries it: ``condition`` in words, ``condition_held`` (False: the step
# ran anyway when the wait timed out, so what follows is not the replicator's doing alone) and
# ``condition_checked_ts_ms``; an event without one has none of the three keys in summary.json.
TimelineEntry = Annotated[TimelineEvent, BeforeValidator(_no_condition), WrapSerializer(_without_absent_condition)]


class Logs(_WithoutAbsentExtras):
    """Where each process of the drill logged; ``drill`` is the drill's own log (``drill.log``)."""

    brokers: dict[str, str] = {}
    toxiproxy: str | None = None
    replicator: dict[str, str] | None = None
    load: list[str] | None = None
    drill: str | None = None

    def _drop_when_none(self) -> tuple[str, ...]:
        return ("toxiproxy", "replicator", "load", "drill")


class LoadWorker(_Model):
    """One worker of a distributed load (``load.workers``, ``load.remote_workers``), as its master reported it."""

    producer: str  # the producer definition's name
    cluster: str  # where that load instance produced
    instance: str  # the worker's instance: in its producer ids and ledger file names
    index: int
    worker_id: str  # Locust's client id
    host: str
    acked: int
    sent: int
    done: bool  # it reported its end and the master held its whole ledger
    error: str | None = None


class DrillSummary(_Model):
    """``summary.json``."""

    schema_version: int = Field(SCHEMA, alias="schema")
    scenario: str
    replicator: str
    passed: bool
    started_at: str
    duration_s: float
    interrupted: bool
    error: str | None
    flows: list[FlowSummary]
    failovers: list[FailoverSummary]
    failbacks: list[FailbackSummary]
    expectations: list[ExpectationRow]
    timeline: list[TimelineEntry]
    logs: Logs
    rerun: str
    # Records written before the load started (the scenario's load.backlog): a sweep must not
    # read a produced rate from a drill that started with its work queued.
    backlog_records: int = 0
    # Added by issue 16 (defaults keep older summaries of schema 1 readable). Every timestamp
    # is epoch milliseconds, as in the histories; ``started_at`` stays for the readers it has.
    started_ms: int | None = None       # the drill started (clusters not yet up)
    load_started_ms: int | None = None  # producers started: the zero ``at`` counts from
    replicator_mode: str = "n/a"        # pyspark: microbatch or realtime; MM2: at-least-once or exactly-once; command: n/a
    versions: dict[str, str] = {}       # mirrordrill, kafka, spark, replicator
    drill_sha256: str | None = None     # of the drill file as run (the folder's scenario.yaml)
    # Where the run's parts ran (pyspark: spark_master as asked, with the URL it resolved to;
    # spark_executors, 0 when Spark ran inside the replicator's process; backend: processes or docker,
    # startup_s: seconds until every cluster was usable; broker_jit: cluster -> c1 or tiered;
    # clusters.<name>.security: protocol, sasl_mechanism, tls, mutual_tls, never a credential).
    environment: dict[str, str | int | float | dict[str, Any] | None] = {}
    # Each start of the replicator's processes (the bundled replicator reports them): started_at_ms,
    # and seconds from the process's start to jvm, spark_session, positions, first_query, query_live,
    # first_record (warm_up: runs before the warm-up batch was dropped).
    replicator_starts: list[dict[str, Any]] = []
    # Added by issue 14. ``passed`` stays (false when interrupted); ``verdict`` tells an
    # interrupted drill from a failed one. ``invariants``: the built-in invariants, from the
    # expectation rows that carry an ``invariant`` name. Both derived when absent.
    verdict: Literal["passed", "failed", "interrupted"] | None = None
    invariants: list[InvariantOutcome] = []
    # Bytes each WAN link carried each way over the whole drill ({"a<->b": {"a->b": n, "b->a": n}}),
    # from Toxiproxy's counters: records, headers, protocol and the replicator's own traffic.
    wan_bytes: dict[str, dict[str, int]] = {}
    # Each *_replicator_node fault: step, node (index), node_name, at_ms, and which node held which
    # task ("<A->B> <task>" -> node index, or the task's state) before it and after it (at the next
    # node fault, or at the end while the replicator still ran); null where the replicator does not tell.
    node_faults: list[dict[str, Any]] = []
    # Each worker of a distributed load, every instance of every producer (empty without load.workers).
    load_workers: list[LoadWorker] = []

    @model_validator(mode="after")
    def _derived(self):
        if self.verdict is None:
            self.verdict = "interrupted" if self.interrupted else "passed" if self.passed else "failed"
        if not self.invariants:
            self.invariants = invariant_outcomes(self.expectations)
        return self

    def unmet_conditions(self) -> list[TimelineEntry]:
        """The timeline steps whose ``when`` did not hold: they ran anyway, after the wait timed out."""
        return [e for e in self.timeline if e.condition and e.condition_held is False]

    def to_json(self) -> dict[str, Any]:
        """The JSON object of summary.json."""
        return self.model_dump(mode="json", by_alias=True)


def invariant_outcomes(rows: list[ExpectationRow]) -> list[InvariantOutcome]:
    """Each built-in invariant's outcome, from its rows, in the order they appear."""
    by_name: dict[str, list[ExpectationRow]] = {}
    for r in rows:
        if r.invariant:
            by_name.setdefault(r.invariant, []).append(r)
    out = []
    for name, mine in by_name.items():
        relaxed = next((r.relaxed for r in mine if r.relaxed), None)
        if relaxed is not None:
            out.append(InvariantOutcome(name=name, outcome="relaxed", reason=relaxed))
            continue
        judged = [r for r in mine if r.note is None or not r.passed]
        if not judged:
            out.append(InvariantOutcome(name=name, outcome="not judged", reason=mine[0].note))
            continue
        out.append(InvariantOutcome(name=name, outcome="held" if all(r.passed for r in mine) else "failed",
                                    rows=[r.name for r in mine]))
    return out


# --------------------------------------------------------------------------- series for plots


@dataclass(frozen=True, slots=True)
class LatencySample:
    """One replicated record: when it was first seen on the target, and how long it took."""

    seen_ts_ms: int
    latency_ms: int


class _SeriesFile(_Model):
    """``series/<flow>.json``: the checker's FlowSeries with its tuple keys spelled out."""

    schema_version: int = Field(SCHEMA, alias="schema")
    flow: str
    produced: SecondSeries
    replicated: SecondSeries
    lag: SecondSeries
    lag_by_partition: list[tuple[str, int, SecondSeries]]
    offset_lag: SecondSeries
    offset_lag_by_partition: list[tuple[str, str, int, SecondSeries]]

    @classmethod
    def of(cls, flow: str, s: FlowSeries) -> _SeriesFile:
        return cls(flow=flow, produced=s.produced, replicated=s.replicated, lag=s.lag,
                   lag_by_partition=[(t, p, v) for (t, p), v in sorted(s.lag_by_partition.items())],
                   offset_lag=s.offset_lag,
                   offset_lag_by_partition=[(t, r, p, v) for (t, r, p), v in sorted(s.offset_lag_by_partition.items())])

    def series(self) -> FlowSeries:
        return FlowSeries(self.produced, self.replicated, self.lag,
                          {(t, p): v for t, p, v in self.lag_by_partition}, self.offset_lag,
                          {(t, r, p): v for t, r, p, v in self.offset_lag_by_partition})


@dataclass(frozen=True)
class FlowPlotData:
    """What the plots of one flow need beyond its summary."""

    series: FlowSeries
    latencies: tuple[LatencySample, ...] = ()


@dataclass(frozen=True)
class FlowResults:
    """One flow of a drill: its summary entry and, when the check ran, its series."""

    name: str
    summary: FlowSummary
    series: FlowSeries | None
    latencies: tuple[LatencySample, ...] = ()


@dataclass(frozen=True)
class DrillResults:
    """Everything a drill measured. ``plots`` is keyed by flow name; a flow the checker could not
    check has none. ``run_dir`` is where the results were saved or loaded from."""

    summary: DrillSummary
    plots: Mapping[str, FlowPlotData] = field(default_factory=dict)
    run_dir: Path | None = None

    @property
    def passed(self) -> bool:
        return self.summary.passed

    @property
    def name(self) -> str:
        return self.summary.scenario

    @property
    def replicator(self) -> str:
        return self.summary.replicator

    @property
    def started_ms(self) -> int:
        """Drill start, epoch ms."""
        if self.summary.started_ms is not None:
            return self.summary.started_ms
        return int(datetime.fromisoformat(self.summary.started_at).timestamp() * 1000)

    @property
    def flows(self) -> list[FlowResults]:
        out = []
        for f in self.summary.flows:
            plot = self.plots.get(f.name)
            out.append(FlowResults(f.name, f, plot.series if plot else None, plot.latencies if plot else ()))
        return out


# --------------------------------------------------------------------------- saving and loading


def _file_stem(flow: str) -> str:
    """A flow name (``primary->dr (via hub)``) as a file name."""
    return re.sub(r"[^\w.-]+", "_", flow).strip("_") or "flow"


def _write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


def save_results(run_dir: Path, results: DrillResults) -> Path:
    """Write summary.json and the series files into ``run_dir``; returns summary.json's path.

    The series go first: a summary.json present means its run's results are complete."""
    run_dir = Path(run_dir)
    series_dir = run_dir / SERIES_DIR
    series_dir.mkdir(parents=True, exist_ok=True)
    for i, (flow, plot) in enumerate(results.plots.items()):
        stem = f"{i}-{_file_stem(flow)}"
        _write_atomically(series_dir / f"{stem}.json",
                          _SeriesFile.of(flow, plot.series).model_dump_json(by_alias=True).encode())
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        writer.writerow(("seen_ts_ms", "latency_ms"))
        writer.writerows((s.seen_ts_ms, s.latency_ms) for s in plot.latencies)
        _write_atomically(series_dir / f"{stem}.latency.csv.gz", gzip.compress(text.getvalue().encode(), mtime=0))
    path = run_dir / SUMMARY_FILE
    _write_atomically(path, json.dumps(results.summary.to_json(), indent=2).encode())
    return path


def _rerun_hint(run_dir: Path, summary: Mapping[str, Any] | None) -> str:
    rerun = (summary or {}).get("rerun")
    return rerun if isinstance(rerun, str) and rerun else f"mirrordrill run <drill file> --out {run_dir}"


def load_results(run_dir: Path) -> DrillResults:
    """Read what :func:`save_results` wrote; :class:`ResultsUnavailable` when the folder has no
    summary, a summary without a schema (an older mirrordrill) or with one this version does not know."""
    run_dir = Path(run_dir).resolve()
    path = run_dir / SUMMARY_FILE
    if not path.is_file():
        raise ResultsUnavailable(f"{run_dir}: no {SUMMARY_FILE}: this is not the --out folder of a finished "
                                 f"'mirrordrill run'. Run the drill: {_rerun_hint(run_dir, None)}")
    try:
        raw = json.loads(path.read_text())
    except ValueError as e:
        raise ResultsUnavailable(f"{path}: not readable JSON ({e}). Re-run the drill: "
                                 f"{_rerun_hint(run_dir, None)}") from None
    if not isinstance(raw, dict) or "schema" not in raw:
        hint = _rerun_hint(run_dir, raw if isinstance(raw, dict) else None)
        raise ResultsUnavailable(f"{path} has no 'schema': it was written by an older mirrordrill whose results "
                                 f"this version cannot read. Re-run the drill: {hint}")
    if raw["schema"] != SCHEMA:
        raise ResultsUnavailable(f"{path} has schema {raw['schema']!r}; this mirrordrill reads schema {SCHEMA}. "
                                 f"Re-run the drill with this version: {_rerun_hint(run_dir, raw)}")
    try:
        summary = DrillSummary.model_validate(raw)
    except ValidationError as e:
        raise ResultsUnavailable(f"{path}: does not match schema {SCHEMA} ({e.error_count()} problem(s), first: "
                                 f"{e.errors()[0]['loc']}: {e.errors()[0]['msg']}). Re-run the drill: "
                                 f"{_rerun_hint(run_dir, raw)}") from None
    try:
        plots = _load_plots(run_dir / SERIES_DIR)
    except (ValidationError, ValueError, OSError, EOFError, csv.Error) as e:
        # a damaged series file: the figures are there, but the plots cannot be trusted
        raise ResultsUnavailable(f"{run_dir / SERIES_DIR}: a series file cannot be read ({type(e).__name__}: "
                                 f"{str(e).splitlines()[0][:200]}). Re-run the drill: {_rerun_hint(run_dir, raw)}") from None
    return DrillResults(summary, plots, run_dir)


def _load_plots(series_dir: Path) -> dict[str, FlowPlotData]:
    plots = {}
    for path in sorted(series_dir.glob("*.json")):
        saved = _SeriesFile.model_validate_json(path.read_bytes())
        if saved.schema_version != SCHEMA:
            raise ValueError(f"{path.name} has schema {saved.schema_version}; this mirrordrill reads {SCHEMA}")
        latency_file = path.with_name(path.name.removesuffix(".json") + ".latency.csv.gz")
        latencies: tuple[LatencySample, ...] = ()
        if latency_file.is_file():
            rows = csv.reader(io.StringIO(gzip.decompress(latency_file.read_bytes()).decode()))
            next(rows, None)  # header
            latencies = tuple(LatencySample(int(seen), int(lat)) for seen, lat in rows)
        plots[saved.flow] = FlowPlotData(saved.series(), latencies)
    return plots
