"""Inputs and results of the checker: plain dataclasses shared by both implementations.

A message id is ``(producer_id, seq)``. Every count is exact and defined in
``harness.drill.checker.reference``, which is the specification in code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from mirrordrill.harness.drill.checker.stall import NOT_MEASURED, FlowStall
from mirrordrill.loadgen.histories.records import (
    AckedSend,
    LagSample,
    ProcessedRecord,
    TargetRecord,
    TimelineEvent,
    UncertainSend,
)

MessageId = tuple[str, int]

# How many ids each debugging sample keeps: the smallest ids, in (producer_id, seq) order.
SAMPLE_SIZE = 20

# Percentiles as whole percent, so nearest-rank stays in exact integer arithmetic.
PERCENTILES: tuple[tuple[str, int], ...] = (("p50", 50), ("p90", 90), ("p99", 99))

MB = 1_000_000  # throughput_mb_s is in SI megabytes


class CheckerInputError(ValueError):
    """The checker was asked something it cannot answer exactly."""


# --------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class FlowScope:
    """Which replication flow ``source -> target`` an input is about, whatever holds its rows.

    ``topic_map`` maps each remote topic on the target to its topic on the source (the
    replication policy already applied). Rows of other clusters or topics are ignored.
    """

    source: str
    target: str
    topic_map: Mapping[str, str]

    def __post_init__(self) -> None:
        validate_flow(self.source, self.target, self.topic_map)


@dataclass(frozen=True)
class FlowInput(FlowScope):
    """Histories of one replication flow ``source -> target``, unfiltered (see :class:`FlowScope`)."""

    acked: Sequence[AckedSend]
    observed: Sequence[TargetRecord]
    uncertain: Sequence[UncertainSend] = ()
    lag_samples: Sequence[LagSample] = ()
    timeline: Sequence[TimelineEvent] = ()
    # Whether replication drained at the end (the drill's drain completed). False: an acked id
    # not seen on the target is lost only when a later record of its source partition arrived
    # without it, else it is ``in_flight`` (an interrupted drill). None: every unseen id is lost.
    drained: bool | None = None


@dataclass(frozen=True)
class FailoverScope:
    """Which consumer group an input is about, failed over from ``primary`` to ``dr`` with one
    start-offset ``strategy``, whatever holds its rows.

    ``topic_map`` maps each remote topic on ``dr`` to the group's topic on ``primary``.
    ``failure_ts_ms`` is when the primary was lost.
    """

    group: str
    strategy: str
    primary: str
    dr: str
    failure_ts_ms: int
    topic_map: Mapping[str, str]

    def __post_init__(self) -> None:
        validate_flow(self.primary, self.dr, self.topic_map)


@dataclass(frozen=True)
class FailoverInput(FailoverScope):
    """Histories of one failed-over consumer group (see :class:`FailoverScope`).

    ``dr_topics`` are the group's topics written directly on ``dr`` (producers that
    failed over too).
    """

    processed: Sequence[ProcessedRecord]
    acked: Sequence[AckedSend]
    observed: Sequence[TargetRecord]
    dr_topics: tuple[str, ...] = ()
    # When ``dr`` was wiped and rebuilt (a failback that switched back to it): records acked
    # there before then are gone and cannot be owed to the group. None: never wiped.
    dr_since_ms: int | None = None


WIPE_EVENT_KIND = "wipe"  # a timeline event of this kind named "wipe <cluster>": its data was deleted


def wipe_times(timeline: Sequence[TimelineEvent], cluster: str) -> list[int]:
    """When ``cluster`` was wiped, in order: each wipe starts a new incarnation of its partitions,
    whose offsets restart at 0."""
    return sorted(e.start_ts_ms for e in timeline if e.kind == WIPE_EVENT_KIND and e.name == f"wipe {cluster}")


def validate_flow(source: str, target: str, topic_map: Mapping[str, str]) -> None:
    """Reject inputs whose answer would be ambiguous."""
    if source == target:
        raise CheckerInputError(f"source and target are the same cluster {source!r}")
    if not topic_map:
        raise CheckerInputError("topic_map is empty: no topic to check")


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class LatencyStats:
    """Nearest-rank percentiles (value at 1-based rank ceil(q*n)) in milliseconds."""

    count: int
    p50: int | None
    p90: int | None
    p99: int | None
    max: int | None

    def as_dict(self) -> dict[str, int | None]:
        """The ``latency_ms`` object of summary.json."""
        return {"p50": self.p50, "p90": self.p90, "p99": self.p99, "max": self.max}


@dataclass(frozen=True, slots=True)
class SecondSeries:
    """One value per second: ``values[i]`` belongs to epoch second ``start_s + i``.

    None marks a second without a value (only in offset-based lag).
    """

    start_s: int
    values: tuple[int | None, ...]

    @property
    def end_s(self) -> int | None:
        """The last second covered, None when empty."""
        return self.start_s + len(self.values) - 1 if self.values else None

    def points(self) -> list[tuple[int, int | None]]:
        """``(epoch second, value)`` pairs, for plotting."""
        return [(self.start_s + i, v) for i, v in enumerate(self.values)]

    def at(self, second: int) -> int | None:
        """The value at one epoch second, None outside the series."""
        i = second - self.start_s
        return self.values[i] if 0 <= i < len(self.values) else None


EMPTY_SERIES = SecondSeries(0, ())


@dataclass(frozen=True, slots=True)
class ReplicationFigures:
    """What one flow, or one topic of it, did. Each id counts in exactly one topic."""

    acked: int                # distinct ids acknowledged on the source
    replicated: int           # acked ids seen on the target
    lost: int                 # acked ids never seen on the target (see FlowInput.drained)
    in_flight: int            # acked ids not seen, not yet known lost (replication had not drained)
    duplicates: int           # sum over seen ids of (distinct target positions - 1)
    reordered: int            # replicated ids landing below an earlier source record
    misplaced: int            # replicated ids landing in another partition number/topic
    corrupted: int            # seen ids with a failed checksum or a checksum not in ledger
    unexpected: int           # seen ids neither acked nor among uncertain sends
    uncertain_delivered: int  # seen ids among uncertain sends, never acked (not an error)
    source_duplicates: int    # sum over acked ids of (distinct source positions - 1)
    latency_ms: LatencyStats  # first seen on target - send, over replicated ids
    replicated_bytes: int
    first_send_ts_ms: int | None        # earliest send of a replicated id
    last_first_seen_ts_ms: int | None   # latest first sighting of a replicated id
    throughput_records_s: float | None  # replicated / (last_first_seen - first_send)
    throughput_mb_s: float | None       # replicated_bytes / same span, in 10^6 bytes


@dataclass(frozen=True, slots=True)
class TopicResult(ReplicationFigures):
    """Figures of one source topic and the remote topics replicating it."""

    topic: str
    remote_topics: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class IdSamples:
    """The first :data:`SAMPLE_SIZE` ids of each kind, in id order, for debugging."""

    lost: tuple[MessageId, ...] = ()
    in_flight: tuple[MessageId, ...] = ()
    duplicates: tuple[MessageId, ...] = ()
    reordered: tuple[MessageId, ...] = ()
    misplaced: tuple[MessageId, ...] = ()
    corrupted: tuple[MessageId, ...] = ()
    unexpected: tuple[MessageId, ...] = ()
    uncertain_delivered: tuple[MessageId, ...] = ()


@dataclass(frozen=True, slots=True)
class FlowSeries:
    """Per-second series of a flow; exact ones first, the offset-based one last.

    ``produced``: ids first acknowledged in each second. ``replicated``: replicated ids
    first seen on the target in each second. ``lag``: at the end of each second, ids
    acknowledged by then and not yet seen on the target (never negative, exact), total
    and per source ``(topic, partition)``. ``offset_lag``: what MM2 users plot, source end
    offset minus target end offset per ``(source topic, remote topic, partition)`` from
    the lag sampler; misleading when target offsets do not start where source offsets do
    (a recreated topic, retention, transactions markers). Its total is None at seconds
    where some partition lacks a sample on either side.
    """

    produced: SecondSeries
    replicated: SecondSeries
    lag: SecondSeries
    lag_by_partition: Mapping[tuple[str, int], SecondSeries]
    offset_lag: SecondSeries
    offset_lag_by_partition: Mapping[tuple[str, str, int], SecondSeries]


@dataclass(frozen=True, slots=True)
class EventImpact:
    """What happened to the flow while one timeline event lasted (ends inclusive)."""

    name: str
    kind: str
    start_ts_ms: int
    end_ts_ms: int | None  # None: never ended, counts to the end of the histories
    outcome: str
    acked: int             # ids first acknowledged during the event
    lost: int              # of those, never seen on the target
    max_lag: int | None    # highest exact lag at the end of a second during the event
    # the longest stall of the flow's partitions that overlapped the event (``checker.stall``);
    # None from a checker that did not measure it
    stall_s: float | None = None


@dataclass(frozen=True, slots=True)
class FlowResult(ReplicationFigures):
    """Everything the checker says about one flow; totals are the sum over ``by_topic``."""

    source: str
    target: str
    topics: tuple[str, ...]  # source topics, sorted
    topic_map: Mapping[str, str]
    by_topic: Mapping[str, TopicResult]
    series: FlowSeries
    samples: IdSamples
    events: tuple[EventImpact, ...]
    stall: FlowStall = NOT_MEASURED  # see harness.drill.checker.stall

    def summary(self) -> dict[str, Any]:
        """The flow's entry in ``summary.json`` (contract names first, extras after)."""
        out: dict[str, Any] = {"source": self.source, "target": self.target, "topics": list(self.topics)}
        out.update(_figures_dict(self))
        out["stall_s"] = self.stall.stall_s
        out["stall_by_partition"] = self.stall.summary_by_partition()
        out["by_topic"] = {t: _figures_dict(r) for t, r in self.by_topic.items()}
        out["samples"] = {k: [list(i) for i in v] for k, v in asdict(self.samples).items()}
        out["events"] = [asdict(e) for e in self.events]
        return out


def _figures_dict(r: ReplicationFigures) -> dict[str, Any]:
    return {
        "acked": r.acked, "replicated": r.replicated, "lost": r.lost,
        "duplicates": r.duplicates, "reordered": r.reordered, "corrupted": r.corrupted,
        "unexpected": r.unexpected, "latency_ms": r.latency_ms.as_dict(),
        "throughput_records_s": r.throughput_records_s,
        "throughput_mb_s": r.throughput_mb_s,
        "misplaced": r.misplaced, "uncertain_delivered": r.uncertain_delivered,
        "source_duplicates": r.source_duplicates, "replicated_bytes": r.replicated_bytes,
        "latency_count": r.latency_ms.count, "in_flight": r.in_flight,
    }


@dataclass(frozen=True, slots=True)
class FailoverResult:
    """The cost of failing one consumer group over with one start-offset strategy."""

    group: str
    strategy: str
    primary: str
    dr: str
    failure_ts_ms: int
    available: int        # ids the group could have processed (see reference.py)
    processed: int        # distinct ids the group processed on either cluster
    skipped: int          # available ids never processed on either cluster
    reprocessed: int      # sum over ids of (processings - 1), both clusters
    reprocessed_across_failover: int  # DR processings of ids done on primary before
    rto_s: float | None   # failure -> first processing on DR, None if none happened
    rpo_records: int      # acked on primary before the failure, never reached DR
    rpo_window_s: float | None        # span of their ack times
    rpo_first_ack_ts_ms: int | None
    rpo_last_ack_ts_ms: int | None
    skipped_sample: tuple[MessageId, ...] = field(default=())
    rpo_sample: tuple[MessageId, ...] = field(default=())

    def summary(self) -> dict[str, Any]:
        """The group's entry in ``summary.json``."""
        out = asdict(self)
        out["skipped_sample"] = [list(i) for i in self.skipped_sample]
        out["rpo_sample"] = [list(i) for i in self.rpo_sample]
        return out
