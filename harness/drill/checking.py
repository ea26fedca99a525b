"""From a drill's histories to the checker's figures (the checker itself lives in harness.drill.checker)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import polars as pl

from mirrordrill.harness.drill.checker.contract import FailoverInput, FlowInput, FlowResult
from mirrordrill.harness.drill.checker.reference import check_failover, check_flow
from mirrordrill.harness.drill.context import FailoverRecord
from mirrordrill.harness.drill.invariants import LoadFacts, producer_prefix
from mirrordrill.harness.drill.results import FailoverSummary, FlowPlotData, FlowSummary, LatencySample, TimelineEntry
from mirrordrill.harness.drill.tail_trace import tail_trace
from mirrordrill.harness.drill.topology import CheckPair
from mirrordrill.loadgen.histories.kinds import (
    ACKED_SENDS,
    END_OFFSETS,
    PROCESSED_RECORDS,
    TARGET_RECORDS,
    TIMELINE_EVENTS,
    UNCERTAIN_SENDS,
    HistoryKind,
    history_files,
)
from mirrordrill.loadgen.histories.reader import read_rows
from mirrordrill.loadgen.histories.records import AckedSend, TargetRecord

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

R = TypeVar("R", bound="DataclassInstance")  # a history row


class Histories:
    """Every history file of one run, read once."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.acked = self._read(ACKED_SENDS)
        self.uncertain = self._read(UNCERTAIN_SENDS)
        self.observed = self._read(TARGET_RECORDS)
        self.processed = self._read(PROCESSED_RECORDS)
        self.lag = self._read(END_OFFSETS)
        self.timeline = self._read(TIMELINE_EVENTS)
        # Each producer id acknowledges on exactly one cluster: that is where its records come from.
        self.origin_of = {a.producer_id: a.cluster for a in self.acked}
        for u in self.uncertain:
            self.origin_of.setdefault(u.producer_id, u.cluster)

    def _read(self, kind: HistoryKind[R]) -> list[R]:
        return read_rows(kind, history_files(self.directory, kind))


def pair_sends(h: Histories, pair: CheckPair) -> list[AckedSend]:
    """The acknowledged sends of ``pair``'s source topics on its origin."""
    origin_topics = set(pair.topic_map.values())
    return [a for a in h.acked if a.cluster == pair.origin and a.topic in origin_topics]


def pair_sightings(h: Histories, pair: CheckPair) -> list[TargetRecord]:
    """The observer's reads that belong to ``pair``: on a target topic that also receives other origins'
    records (identity policy, aggregation), only records of this origin (or of no known producer: phantoms)."""
    return [r for r in h.observed if r.cluster == pair.target and r.topic in pair.topic_map
            and h.origin_of.get(r.producer_id, pair.origin) == pair.origin]


def check_pair(h: Histories, pair: CheckPair) -> FlowResult:
    """The checker's figures for records produced on ``pair.origin`` arriving on ``pair.target``."""
    origin_topics = set(pair.topic_map.values())
    acked = pair_sends(h, pair)
    uncertain = [u for u in h.uncertain if u.cluster == pair.origin and u.topic in origin_topics]
    observed = pair_sightings(h, pair)
    lag = [s for s in h.lag if (s.cluster == pair.origin and s.topic in origin_topics)
           or (s.cluster == pair.target and s.topic in pair.topic_map)]
    return check_flow(FlowInput(source=pair.origin, target=pair.target, topic_map=dict(pair.topic_map),
                                acked=acked, observed=observed, uncertain=uncertain, lag_samples=lag,
                                timeline=h.timeline, drained=drained(h)))


def drained(h: Histories) -> bool:
    """Whether the drill's final drain completed: only then is every record not on the target lost;
    before it (an interrupted drill), one may still be on its way (``in_flight``)."""
    return any(e.kind == DRAIN_EVENT_KIND and e.outcome == "ok" for e in h.timeline)


def acked_by_prefix(h: Histories) -> dict[str, int]:
    """Distinct acknowledged records per producer definition and cluster (``<name>-<cluster>``)."""
    ids: dict[str, set[tuple[str, int]]] = {}
    for a in h.acked:
        ids.setdefault(producer_prefix(a.producer_id), set()).add((a.producer_id, a.seq))
    return {k: len(v) for k, v in ids.items()}


def latency_samples(h: Histories, pair: CheckPair) -> tuple[LatencySample, ...]:
    """Per replicated acknowledged record: first sighting on the target minus its send time,
    in order of arrival (the latency plots draw them over time)."""
    origin_topics = set(pair.topic_map.values())
    sent = {(a.producer_id, a.seq): a.send_ts_ms for a in h.acked
            if a.cluster == pair.origin and a.topic in origin_topics}
    first_seen: dict[tuple[str, int], int] = {}
    for r in h.observed:
        if r.cluster != pair.target or r.topic not in pair.topic_map:
            continue
        key = (r.producer_id, r.seq)
        if key in sent and (key not in first_seen or r.seen_ts_ms < first_seen[key]):
            first_seen[key] = r.seen_ts_ms
    return tuple(sorted((LatencySample(seen, seen - sent[k]) for k, seen in first_seen.items()),
                        key=lambda s: s.seen_ts_ms))


def check_group(h: Histories, failover: FailoverRecord) -> FailoverSummary:
    """The cost of one consumer group's failover (``failover``: the record the failover step kept)."""
    result = check_failover(FailoverInput(
        group=failover.group, strategy=failover.strategy, primary=failover.primary, dr=failover.dr,
        failure_ts_ms=failover.failure_ts_ms, topic_map=dict(failover.topic_map),
        processed=[p for p in h.processed if p.group == failover.group], acked=h.acked,
        observed=[r for r in h.observed if r.cluster == failover.dr], dr_topics=tuple(failover.dr_topics),
        dr_since_ms=failover.dr_since_ms))
    return FailoverSummary.model_validate(result.summary())


DRAIN_EVENT_KIND = "drain"  # the engine's final drain (engine._drain), "ok" when lag reached 0


@dataclass
class Checked:
    """Everything the checker said about one drill's histories."""

    flows: list[FlowSummary] = field(default_factory=list)
    plots: dict[str, FlowPlotData] = field(default_factory=dict)
    failovers: list[FailoverSummary] = field(default_factory=list)
    timeline: list[TimelineEntry] = field(default_factory=list)
    acked_by_prefix: dict[str, int] = field(default_factory=dict)  # see acked_by_prefix()

    def load_facts(self, load_started_ms: int | None) -> LoadFacts:
        """What the load invariant judges."""
        return LoadFacts(dict(self.acked_by_prefix), list(self.timeline), load_started_ms)


def check_drill(histories: Path, pairs: list[CheckPair], failovers: list[FailoverRecord], out: Checked,
                traces: pl.DataFrame | None = None) -> None:
    """Check every flow and every failed-over group once, with the series the plots draw, into
    ``out`` as it goes: when one check fails, what was checked before it is still reported.
    ``traces``: the replicator's trace lines (``run --trace``), which give each flow its ``tail_trace``."""
    h = Histories(histories)
    out.timeline = list(h.timeline)
    out.acked_by_prefix = acked_by_prefix(h)
    for pair in pairs:
        result = check_pair(h, pair)
        trace = (tail_trace(pair_sends(h, pair), pair_sightings(h, pair), traces, result.replicated)
                 if traces is not None else None)
        out.flows.append(FlowSummary.of({**result.summary(), "tail_trace": trace}, pair.name, pair.via))
        out.plots[pair.name] = FlowPlotData(result.series, latency_samples(h, pair))
    for fo in failovers:
        out.failovers.append(check_group(h, fo))
