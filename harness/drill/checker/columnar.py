"""The flow check as joins and group-bys over columnar histories (Polars): the specification of
every flow figure, computed for all ids at once.

Records are matched by id ``(producer_id, seq)``, never by position, so a reordering is
never mistaken for a loss plus a duplicate.

Per id, the ledger's *first ack* (earliest ``ack_ts_ms``; ties by topic, partition,
offset) gives its source topic, partition, offset, send time and size; its *first
sighting* on the target (earliest ``seen_ts_ms``; ties by topic, partition, offset) gives
its target position and replication latency. Each id counts in one topic: its acked
topic, else the topic of its uncertain send, else the source topic of the remote topic it
was first seen in. So the flow's figures are the sum of its topics' figures.

Reordered: walk each source partition in source offset order (a wiped source starts its
offsets again: each incarnation, the records acked between two wipes, is walked on its own);
a replicated id is reordered when its first target offset is below the highest first target
offset, in the same target partition, of a record before it. In flight (only when replication
did not drain): acked, not seen, and above every seen record of its source partition's
incarnation; below one it was skipped, so it is lost.

Polars because its lazy joins, group-bys and window functions express each of these as one
query over millions of rows, in exact 64-bit integers, on every core (see the manual's checker
page); the per-id Python it replaced built one object per record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

import polars as pl

from mirrordrill.harness.drill.checker.contract import (
    SAMPLE_SIZE,
    EventImpact,
    FlowInput,
    FlowResult,
    FlowScope,
    IdSamples,
    MessageId,
    SecondSeries,
    TopicResult,
    wipe_times,
)
from mirrordrill.harness.drill.checker.figures import Tally, event_impact, figure_fields, flow_series, latency_stats
from mirrordrill.harness.drill.checker.stall import FlowStall, PartitionKey, event_windows, flow_stall
from mirrordrill.loadgen.histories.columnar import frame_of
from mirrordrill.loadgen.histories.kinds import ACKED_SENDS, TARGET_RECORDS, UNCERTAIN_SENDS
from mirrordrill.loadgen.histories.records import LagSample, TimelineEvent

ID = ["producer_id", "seq"]
_C = pl.col

# Per-id verdict columns summed per topic into a Tally (name -> how much one id adds).
_SUMMED: dict[str, pl.Expr] = {
    "acked": _C("acked"),
    "replicated": _C("replicated"),
    "lost": _C("lost"),
    "in_flight": _C("in_flight"),
    "duplicates": pl.when(_C("seen")).then(_C("t_positions") - 1).otherwise(0),
    "reordered": _C("reordered"),
    "misplaced": _C("misplaced"),
    "corrupted": _C("corrupted"),
    "unexpected": _C("unexpected"),
    "uncertain_delivered": _C("uncertain_delivered"),
    "source_duplicates": pl.when(_C("acked")).then(_C("positions") - 1).otherwise(0),
    "replicated_bytes": pl.when(_C("replicated")).then(_C("size_bytes")).otherwise(0),
}
# Which ids each debugging sample draws from (IdSamples' fields).
_SAMPLED: dict[str, pl.Expr] = {
    "lost": _C("lost"), "in_flight": _C("in_flight"), "duplicates": _C("t_positions") > 1,
    "reordered": _C("reordered"), "misplaced": _C("misplaced"), "corrupted": _C("corrupted"),
    "unexpected": _C("unexpected"), "uncertain_delivered": _C("uncertain_delivered"),
}


@dataclass(frozen=True)
class ColumnarFlowInput(FlowScope):
    """:class:`FlowInput` with the three large histories as frames (columns of
    ``loadgen.histories.columnar``: acked sends, target records, uncertain sends), unfiltered."""

    acked: pl.DataFrame
    observed: pl.DataFrame
    uncertain: pl.DataFrame
    lag_samples: Sequence[LagSample] = ()
    timeline: Sequence[TimelineEvent] = ()
    drained: bool | None = None  # as FlowInput.drained


def as_columnar(inp: FlowInput) -> ColumnarFlowInput:
    """A row-based input as frames."""
    return ColumnarFlowInput(
        inp.source, inp.target, inp.topic_map, acked=frame_of(ACKED_SENDS, inp.acked),
        observed=frame_of(TARGET_RECORDS, inp.observed),
        uncertain=frame_of(UNCERTAIN_SENDS, inp.uncertain), lag_samples=inp.lag_samples,
        timeline=inp.timeline, drained=inp.drained)


def check_flow(inp: FlowInput | ColumnarFlowInput) -> FlowResult:
    """Every figure of one replication flow, exact."""
    columnar = inp if isinstance(inp, ColumnarFlowInput) else as_columnar(inp)
    topic_map = dict(columnar.topic_map)
    source_topics = sorted(set(topic_map.values()))
    ids = _verdicts(columnar, topic_map, source_topics)
    acks, caught_up, first_seen = _second_counts(ids)
    source_ends, target_ends = _latest_end_offsets(columnar, source_topics, topic_map)
    series = flow_series(acks, caught_up, first_seen, source_ends, target_ends, topic_map)
    by_topic = _by_topic(ids, source_topics)
    total = Tally()
    for t in by_topic.values():
        total.add(t)
    replicated = ids.filter(_C("replicated"))
    stall = _stall(columnar, ids, source_topics)
    return FlowResult(
        source=columnar.source, target=columnar.target, topics=tuple(source_topics),
        topic_map=topic_map,
        by_topic={topic: TopicResult(topic=topic, remote_topics=remotes,
                                     **figure_fields(by_topic[topic], latencies))
                  for topic, (remotes, latencies) in _topic_latencies(replicated, source_topics,
                                                                      topic_map).items()},
        series=series, samples=_samples(ids),
        events=_event_impacts(columnar.timeline, ids, series.lag, stall.by_window),
        stall=stall,
        **figure_fields(total, latency_stats(_sorted_latencies(replicated))))


def _stall(inp: ColumnarFlowInput, ids: pl.DataFrame, source_topics: list[str]) -> FlowStall:
    """Per source partition, its ids' first ack and first sighting; the observation ends at the
    flow's latest first ack, first sighting or end-offset sample (see checker.stall)."""
    per_partition = (ids.filter(_C("acked")).group_by("topic", "partition")
                     .agg(_C("ack_ts_ms"), _C("seen_ts_ms")))
    partitions: dict[PartitionKey, tuple[list[int], list[int | None]]] = {
        (topic, partition): (acks, seens) for topic, partition, acks, seens in per_partition.iter_rows()}
    samples = [s.ts_ms for s in inp.lag_samples
               if (s.cluster == inp.source and s.topic in source_topics)
               or (s.cluster == inp.target and s.topic in inp.topic_map)]
    latest = [int(v) for v in (ids["ack_ts_ms"].max(), ids["seen_ts_ms"].max()) if isinstance(v, int)]
    return flow_stall(partitions, max([*latest, *samples], default=None), event_windows(inp.timeline))


# --------------------------------------------------------------------------- per id


def _epoch(ts: pl.Expr, wipes: list[int]) -> pl.Expr:
    """Which incarnation of the source a timestamp falls in: how many wipes happened by then."""
    epoch = pl.lit(0, dtype=pl.Int64)
    for w in wipes:
        epoch = epoch + (ts >= w).cast(pl.Int64)
    return epoch


def _verdicts(inp: ColumnarFlowInput, topic_map: dict[str, str], source_topics: list[str]) -> pl.DataFrame:
    """One row per id acked or seen: its first ack, first sighting, topic and every verdict."""
    acked = inp.acked.lazy().filter((_C("cluster") == inp.source) & _C("topic").is_in(source_topics))
    observed = inp.observed.lazy().filter((_C("cluster") == inp.target)
                                          & _C("topic").is_in(list(topic_map)))
    uncertain = (inp.uncertain.lazy()
                 .filter((_C("cluster") == inp.source) & _C("topic").is_in(source_topics))
                 .group_by(ID).agg(u_topic=_C("topic").min()))
    wipes = wipe_times(inp.timeline, inp.source)

    # Sorted by id first, the group-bys below take each id's rows as one run (cheaper than
    # hashing them apart); stable sorts keep ties in input order.
    ledger = (acked.sort([*ID, "ack_ts_ms", "topic", "partition", "offset"], maintain_order=True)
              .group_by(ID, maintain_order=True).agg(_C("topic", "partition", "offset", "send_ts_ms", "ack_ts_ms",
                                   "size_bytes").first(),
                                positions=pl.struct("topic", "partition", "offset").n_unique())
              .with_columns(acked=pl.lit(True), epoch=_epoch(_C("ack_ts_ms"), wipes)))
    # Ids read with a checksum the ledger never acknowledged for them.
    foreign = (observed.select(*ID, "checksum").unique()
               .join(acked.select(*ID, "checksum").unique(), on=[*ID, "checksum"], how="anti")
               .select(ID).unique().with_columns(foreign=pl.lit(True)))
    sightings = (observed.sort([*ID, "seen_ts_ms", "topic", "partition", "offset"], maintain_order=True)
                 .group_by(ID, maintain_order=True).agg(_C("seen_ts_ms").first(), remote=_C("topic").first(),
                                   t_partition=_C("partition").first(),
                                   t_offset=_C("offset").first(),
                                   t_positions=pl.struct("topic", "partition", "offset").n_unique(),
                                   bad_read=(~_C("checksum_ok")).any())
                 .join(foreign, on=ID, how="left")
                 .with_columns(seen=pl.lit(True)))
    ids = (ledger.join(sightings, on=ID, how="full", coalesce=True)
           .join(uncertain, on=ID, how="left")
           .with_columns(_C("acked", "seen", "foreign").fill_null(False))
           .with_columns(replicated=_C("acked") & _C("seen"),
                         owner=pl.coalesce(_C("topic"), _C("u_topic"),
                                           _C("remote").replace_strict(topic_map, default=None))))
    ids = _reordered(ids).with_columns(in_flight=_in_flight(inp.drained))
    return ids.with_columns(
        lost=_C("acked") & ~_C("seen") & ~_C("in_flight"),
        corrupted=_C("seen") & (_C("bad_read") | (_C("acked") & _C("foreign"))),
        unexpected=_C("seen") & ~_C("acked") & _C("u_topic").is_null(),
        uncertain_delivered=_C("seen") & ~_C("acked") & _C("u_topic").is_not_null(),
        misplaced=_C("replicated") & ((_C("t_partition") != _C("partition"))
                                      | (_C("remote").replace_strict(topic_map, default=None)
                                         != _C("topic")))).collect()


def _reordered(ids: pl.LazyFrame) -> pl.LazyFrame:
    """``reordered``: replicated ids below the running highest first target offset of the records
    before them in their source partition's incarnation, per target partition."""
    walk = ["topic", "partition", "epoch", "remote", "t_partition"]
    before = _C("t_offset").cum_max().shift(1).over(walk, order_by=["offset", *ID])
    return ids.with_columns(reordered=pl.when(_C("replicated"))
                            .then((_C("t_offset") < before).fill_null(False))
                            .otherwise(False))


def _in_flight(drained: bool | None) -> pl.Expr:
    """Acked, unseen, and above every seen record of its partition's incarnation (see the module)."""
    if drained is not False:
        return pl.lit(False)
    partition = ["topic", "partition", "epoch"]
    highest_seen = (pl.when(_C("replicated")).then(_C("offset")).otherwise(None)
                    .max().over(partition).fill_null(-1))
    return _C("acked") & ~_C("seen") & (_C("offset") > highest_seen)


# --------------------------------------------------------------------------- aggregates


def _by_topic(ids: pl.DataFrame, source_topics: list[str]) -> dict[str, Tally]:
    """Each source topic's integer aggregates."""
    sums = (ids.group_by("owner")
            .agg(*(e.cast(pl.Int64).sum().alias(n) for n, e in _SUMMED.items()),
                 first_send_ts_ms=pl.when(_C("replicated")).then(_C("send_ts_ms")).min(),
                 last_first_seen_ts_ms=pl.when(_C("replicated")).then(_C("seen_ts_ms")).max()))
    out = {t: Tally() for t in source_topics}
    names = {f.name for f in fields(Tally)}
    for row in sums.iter_rows(named=True):
        out[row.pop("owner")] = Tally(**{k: v for k, v in row.items() if k in names})
    return out


def _sorted_latencies(replicated: pl.DataFrame) -> list[int]:
    return (replicated["seen_ts_ms"] - replicated["send_ts_ms"]).sort().to_list()


def _topic_latencies(replicated: pl.DataFrame, source_topics: list[str], topic_map: dict[str, str]):
    """Per source topic (in order): its remote topics and the latency figures of its ids."""
    out = {}
    for topic in source_topics:
        remotes = tuple(sorted(r for r, s in topic_map.items() if s == topic))
        out[topic] = (remotes, latency_stats(_sorted_latencies(replicated.filter(_C("owner") == topic))))
    return out


def _counts(frame: pl.DataFrame, keys: list[str]) -> dict:
    """``{key tuple (or the one key): number of rows}`` of a small group-by."""
    grouped = frame.group_by(keys).len()
    if len(keys) == 1:
        return dict(zip(grouped[keys[0]].to_list(), grouped["len"].to_list(), strict=True))
    return {tuple(r[:-1]): r[-1] for r in grouped.iter_rows()}


def _second_counts(ids: pl.DataFrame) -> tuple[dict, dict, dict]:
    """Per (topic, partition, second): first acks, and replicated ids caught up (acked and seen by
    then); per second: replicated ids first seen."""
    acked = ids.filter(_C("acked")).with_columns(second=_C("ack_ts_ms") // 1000)
    replicated = ids.filter(_C("replicated")).with_columns(
        second=pl.max_horizontal("ack_ts_ms", "seen_ts_ms") // 1000,
        seen_second=_C("seen_ts_ms") // 1000)
    return (_counts(acked, ["topic", "partition", "second"]),
            _counts(replicated, ["topic", "partition", "second"]),
            _counts(replicated, ["seen_second"]))


def _samples(ids: pl.DataFrame) -> IdSamples:
    def first(kind: pl.Expr) -> tuple[MessageId, ...]:
        chosen = ids.filter(kind.fill_null(False)).select(ID).sort(ID).head(SAMPLE_SIZE)
        return tuple(chosen.iter_rows())
    return IdSamples(**{name: first(kind) for name, kind in _SAMPLED.items()})


def _event_impacts(timeline: Sequence[TimelineEvent], ids: pl.DataFrame,
                   lag: SecondSeries, stalls_ms: Sequence[int]) -> tuple[EventImpact, ...]:
    """Per timeline event: the ids first acked while it lasted, how many of those were lost, and
    ``stalls_ms``' entry for it."""
    acked = ids.filter(_C("acked")).select("ack_ts_ms", "lost")
    events = []
    for e, stall_ms in zip(timeline, stalls_ms, strict=True):
        during = _C("ack_ts_ms") >= e.start_ts_ms
        if e.end_ts_ms is not None:
            during = during & (_C("ack_ts_ms") <= e.end_ts_ms)
        inside = acked.filter(during)
        events.append(event_impact(e, inside.height, int(inside["lost"].sum()), lag, stall_ms))
    return tuple(events)


def _latest_end_offsets(inp: ColumnarFlowInput, source_topics: list[str], topic_map: Mapping[str, str]):
    """End offset of the last sample in each second, per side and partition (few rows: plain Python)."""
    latest: dict[tuple[bool, str, int, int], tuple[int, int]] = {}
    for s in inp.lag_samples:
        if s.cluster == inp.source and s.topic in source_topics:
            is_source = True
        elif s.cluster == inp.target and s.topic in topic_map:
            is_source = False
        else:
            continue
        key = (is_source, s.topic, s.partition, s.ts_ms // 1000)
        sample = (s.ts_ms, s.end_offset)
        if key not in latest or sample > latest[key]:
            latest[key] = sample
    source = {k[1:]: v[1] for k, v in latest.items() if k[0]}
    target = {k[1:]: v[1] for k, v in latest.items() if not k[0]}
    return source, target
