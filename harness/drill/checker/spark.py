"""The checker on Spark DataFrames: the figures of ``reference.py``, for tens of millions
of records. Rows stay in Spark; only per-topic aggregates, per-second counts and the
small id samples reach the driver.

The plan: one row per id (full outer join of the ledger's and the observer's per-id
aggregates), persisted, then a handful of small aggregations over it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Row, SparkSession, Window
from pyspark.sql import functions as F

from mirrordrill.harness.drill.checker.contract import (
    PERCENTILES,
    SAMPLE_SIZE,
    CheckerInputError,
    FailoverResult,
    FailoverScope,
    FlowResult,
    FlowScope,
    IdSamples,
    LatencyStats,
    MessageId,
    TopicResult,
    wipe_times,
)
from mirrordrill.harness.drill.checker.figures import Tally, event_impact, figure_fields, flow_series
from mirrordrill.harness.drill.checker.spark_io import load_history
from mirrordrill.harness.drill.checker.spark_stall import spark_flow_stall
from mirrordrill.harness.drill.checker.stall import event_windows
from mirrordrill.loadgen.histories.kinds import (
    ACKED_SENDS,
    END_OFFSETS,
    PROCESSED_RECORDS,
    TARGET_RECORDS,
    UNCERTAIN_SENDS,
    history_files,
)
from mirrordrill.loadgen.histories.records import TimelineEvent

ID = ["producer_id", "seq"]
_SAMPLE_KINDS = ("lost", "in_flight", "duplicates", "reordered", "misplaced", "corrupted", "unexpected",
                 "uncertain_delivered")
_TALLY_SUMS = ("acked", "replicated", "lost", "in_flight", "duplicates", "reordered", "misplaced",
               "corrupted", "unexpected", "uncertain_delivered", "source_duplicates",
               "replicated_bytes")


@dataclass(frozen=True)
class SparkFlowInput(FlowScope):
    """``FlowInput`` with DataFrames (schemas of ``loadgen.histories``) instead of lists."""

    acked: DataFrame
    observed: DataFrame
    uncertain: DataFrame | None = None
    lag_samples: DataFrame | None = None
    timeline: Sequence[TimelineEvent] = ()
    drained: bool | None = None  # see FlowInput.drained


@dataclass(frozen=True)
class SparkFailoverInput(FailoverScope):
    """``FailoverInput`` with DataFrames instead of lists."""

    processed: DataFrame
    acked: DataFrame
    observed: DataFrame
    dr_topics: tuple[str, ...] = ()
    dr_since_ms: int | None = None  # see FailoverInput


def load_flow_input(spark: SparkSession, directory: str | os.PathLike, source: str,
                    target: str, topic_map: Mapping[str, str],
                    timeline: Sequence[TimelineEvent] = (),
                    drained: bool | None = None) -> SparkFlowInput:
    """A flow's input from a run's history directory (see ``history_files``)."""
    def frame(kind):
        return load_history(spark, kind, history_files(directory, kind)).frame
    return SparkFlowInput(source, target, dict(topic_map), frame(ACKED_SENDS),
                          frame(TARGET_RECORDS), frame(UNCERTAIN_SENDS), frame(END_OFFSETS),
                          tuple(timeline), drained)


def load_failover_input(spark: SparkSession, directory: str | os.PathLike, group: str,
                        strategy: str, primary: str, dr: str, failure_ts_ms: int,
                        topic_map: Mapping[str, str],
                        dr_topics: tuple[str, ...] = (), dr_since_ms: int | None = None) -> SparkFailoverInput:
    """A failed-over group's input from a run's history directory."""
    def frame(kind):
        return load_history(spark, kind, history_files(directory, kind)).frame
    return SparkFailoverInput(group, strategy, primary, dr, failure_ts_ms, dict(topic_map),
                              frame(PROCESSED_RECORDS), frame(ACKED_SENDS),
                              frame(TARGET_RECORDS), tuple(dr_topics), dr_since_ms)


def _require_nearest_rank(spark: SparkSession) -> None:
    # Spark >= 3.5 computes percentile_disc as the value at rank ceil(q*n) (checked
    # against the reference in the integration tests); the legacy setting does not.
    if (spark.conf.get("spark.sql.legacy.percentileDiscCalculation") or "").lower() == "true":
        raise CheckerInputError("spark.sql.legacy.percentileDiscCalculation=true breaks "
                                "nearest-rank percentiles; unset it for the checker")


def _seconds(column: str) -> Column:
    return F.expr(f"`{column}` div 1000")  # integer division: no rounding at the edge


def _lookup(mapping: Mapping[str, str], key: Column) -> Column:
    pairs = [F.lit(x) for item in sorted(mapping.items()) for x in item]
    return F.element_at(F.create_map(*pairs), key)


def _first_ids(rows, kinds: Sequence[str]) -> dict[str, tuple[MessageId, ...]]:
    out: dict[str, list[MessageId]] = {k: [] for k in kinds}
    for r in rows:
        out[r["kind"]].append((r["producer_id"], r["seq"]))
    return {k: tuple(sorted(v)) for k, v in out.items()}


def _samples(ids: DataFrame, flags: Mapping[str, Column]) -> dict[str, tuple[MessageId, ...]]:
    """The SAMPLE_SIZE smallest ids of each flag, in one job."""
    kinds = F.array_compact(F.array(*[F.when(c, F.lit(k)) for k, c in flags.items()]))
    rank = F.row_number().over(Window.partitionBy("kind").orderBy(*ID))
    rows = (ids.select(*ID, F.explode(kinds).alias("kind"))
            .withColumn("rank", rank).where(F.col("rank") <= SAMPLE_SIZE).collect())
    return _first_ids(rows, list(flags))


# --------------------------------------------------------------------------- flows


def _flow_ids(inp: SparkFlowInput, source_topics: list[str], remotes: list[str]) -> DataFrame:
    """One row per id seen in the ledger or on the target, with every per-id verdict."""
    ids = _ledger(inp, source_topics).join(_sightings(inp, remotes), ID, "full_outer")
    ids = _with_uncertain_topic(ids, inp, source_topics)
    ids = _verdicts(ids, inp.topic_map)
    ids = ids.withColumn("epoch", _epoch(wipe_times(inp.timeline, inp.source)))
    ids = _with_reordered(ids)
    if inp.drained is not False:
        return ids.withColumn("in_flight", F.lit(False))
    return _with_in_flight(ids)


def _ledger(inp: SparkFlowInput, source_topics: list[str]) -> DataFrame:
    """Per id: its first ack (struct ``a``), how many source positions and which checksums."""
    col = F.col
    acks = inp.acked.where((col("cluster") == inp.source) & col("topic").isin(source_topics))
    return acks.groupBy(*ID).agg(
        F.min(F.struct("ack_ts_ms", "topic", "partition", "offset", "send_ts_ms",
                       "size_bytes")).alias("a"),
        F.size(F.collect_set(F.struct("topic", "partition", "offset"))).alias("a_positions"),
        F.collect_set("checksum").alias("a_checksums"))


def _sightings(inp: SparkFlowInput, remotes: list[str]) -> DataFrame:
    """Per id: its first read on the target (struct ``s``), its positions, checksums, bad reads."""
    col = F.col
    obs = inp.observed.where((col("cluster") == inp.target) & col("topic").isin(remotes))
    return obs.groupBy(*ID).agg(
        F.min(F.struct("seen_ts_ms", "topic", "partition", "offset")).alias("s"),
        F.size(F.collect_set(F.struct("topic", "partition", "offset"))).alias("s_positions"),
        F.collect_set("checksum").alias("s_checksums"),
        F.max(~F.coalesce(col("checksum_ok"), F.lit(False))).alias("bad_read"))


def _with_uncertain_topic(ids: DataFrame, inp: SparkFlowInput, source_topics: list[str]) -> DataFrame:
    """``u_topic``: for an id sent without an answer from the source, the (smallest) topic it was
    sent to; null for every other id."""
    col = F.col
    if inp.uncertain is None:
        return ids.withColumn("u_topic", F.lit(None).cast("string"))
    unc = (inp.uncertain
           .where((col("cluster") == inp.source) & col("topic").isin(source_topics))
           .groupBy(*ID).agg(F.min("topic").alias("u_topic")))
    return ids.join(unc, ID, "left")


def _verdicts(ids: DataFrame, topic_map: Mapping[str, str]) -> DataFrame:
    """The id's topic, first positions and times, and each verdict that needs only its own row."""
    col = F.col
    acked, seen = col("a").isNotNull(), col("s").isNotNull()
    replicated = acked & seen
    seen_in = _lookup(topic_map, col("s.topic"))  # source topic of the first sighting
    return ids.select(
        *ID,
        F.coalesce(col("a.topic"), col("u_topic"), seen_in).alias("topic"),
        col("a.partition").alias("a_partition"), col("a.offset").alias("a_offset"),
        col("a.ack_ts_ms").alias("ack_ts"), col("a.send_ts_ms").alias("send_ts"),
        col("a.size_bytes").alias("size_bytes"),
        col("s.seen_ts_ms").alias("seen_ts"), col("s.topic").alias("s_topic"),
        col("s.partition").alias("s_partition"), col("s.offset").alias("s_offset"),
        acked.alias("acked"), seen.alias("seen"), replicated.alias("replicated"),
        (acked & ~seen).alias("lost"),
        F.when(seen, col("s_positions") - 1).otherwise(0).alias("duplicates"),
        F.when(acked, col("a_positions") - 1).otherwise(0).alias("source_duplicates"),
        (seen & (col("bad_read") | (acked & (F.size(F.array_except(
            col("s_checksums"), col("a_checksums"))) > 0)))).alias("corrupted"),
        (seen & ~acked & col("u_topic").isNull()).alias("unexpected"),
        (seen & ~acked & col("u_topic").isNotNull()).alias("uncertain_delivered"),
        (replicated & ((col("s.partition") != col("a.partition"))
                       | (seen_in != col("a.topic")))).alias("misplaced"),
        F.when(replicated, col("s.seen_ts_ms") - col("a.send_ts_ms")).alias("latency"))


def _epoch(wipes: list[int]) -> Column:
    """The source's incarnation an ack belongs to: how many wipes came before it."""
    epoch = F.lit(0)
    for wiped_at in wipes:
        epoch = epoch + F.when(F.col("ack_ts") >= wiped_at, 1).otherwise(0)
    return epoch


def _with_reordered(ids: DataFrame) -> DataFrame:
    """Walk each source partition in source order, per target partition it landed in; a wiped
    source restarts its offsets, so each incarnation (acks between two wipes) walks alone."""
    col = F.col
    walk = (Window.partitionBy("topic", "a_partition", "epoch", "s_topic", "s_partition")
            .orderBy("a_offset", *ID).rowsBetween(Window.unboundedPreceding, -1))
    highest_before = F.max("s_offset").over(walk)
    return ids.withColumn(
        "reordered", col("replicated") & F.coalesce(col("s_offset") < highest_before,
                                                    F.lit(False)))


def _with_in_flight(ids: DataFrame) -> DataFrame:
    """Not drained: an unseen id above every seen one of its source partition (incarnation)
    may still be on its way; below one, it was skipped (see reference._in_flight)."""
    col = F.col
    incarnation = Window.partitionBy("topic", "a_partition", "epoch")
    highest_seen = F.max(F.when(col("replicated"), col("a_offset"))).over(incarnation)
    in_flight = col("lost") & (col("a_offset") > F.coalesce(highest_seen, F.lit(-1)))
    return (ids.withColumn("in_flight", in_flight)
            .withColumn("lost", col("lost") & ~col("in_flight")))


def _flow_tallies(ids: DataFrame) -> tuple[dict[str | None, Tally], dict[str | None,
                                                                         LatencyStats]]:
    """Per-topic and total (key None) tallies and latency stats, in one job."""
    col = F.col
    sums = [F.coalesce(F.sum(col(c).cast("long")), F.lit(0)).alias(c)
            for c in _TALLY_SUMS if c != "replicated_bytes"]
    percentiles = [F.expr(f"percentile_disc({pct / 100!r}) WITHIN GROUP (ORDER BY latency)")
                   .alias(name) for name, pct in PERCENTILES]
    rows = ids.rollup("topic").agg(
        F.grouping("topic").alias("is_total"), *sums,
        F.coalesce(F.sum(F.when(col("replicated"), col("size_bytes"))), F.lit(0))
        .alias("replicated_bytes"),
        F.min(F.when(col("replicated"), col("send_ts"))).alias("first_send_ts_ms"),
        F.max(F.when(col("replicated"), col("seen_ts"))).alias("last_first_seen_ts_ms"),
        F.count("latency").alias("latency_count"), *percentiles,
        F.max("latency").alias("latency_max")).collect()
    tallies: dict[str | None, Tally] = {}
    latencies: dict[str | None, LatencyStats] = {}
    for r in rows:
        key = None if r["is_total"] else r["topic"]
        tallies[key] = Tally(**{c: r[c] for c in _TALLY_SUMS},
                             first_send_ts_ms=r["first_send_ts_ms"],
                             last_first_seen_ts_ms=r["last_first_seen_ts_ms"])
        p = {name: None if r[name] is None else int(r[name]) for name, _ in PERCENTILES}
        latencies[key] = LatencyStats(r["latency_count"], p["p50"], p["p90"], p["p99"],
                                      r["latency_max"])
    return tallies, latencies


def _flow_counts(ids: DataFrame):
    """Per-second counts behind the exact series: acks, caught-up and first sightings."""
    col = F.col
    happenings = F.array_compact(F.array(
        F.struct(F.lit(0).alias("k"), _seconds("ack_ts").alias("sec")),
        F.when(col("replicated"), F.struct(F.lit(1).alias("k"),
                                           F.expr("greatest(ack_ts, seen_ts) div 1000")
                                           .alias("sec"))),
        F.when(col("replicated"), F.struct(F.lit(2).alias("k"),
                                           _seconds("seen_ts").alias("sec")))))
    rows = (ids.where(col("acked"))
            .select("topic", "a_partition", F.explode(happenings).alias("h"))
            .groupBy("topic", "a_partition", "h.k", "h.sec").count().collect())
    acks: dict = {}
    caught_up: dict = {}
    first_seen: dict = {}
    for r in rows:
        key = (r["topic"], r["a_partition"], r["sec"])
        if r["k"] == 0:
            acks[key] = r["count"]
        elif r["k"] == 1:
            caught_up[key] = r["count"]
        else:
            first_seen[r["sec"]] = first_seen.get(r["sec"], 0) + r["count"]
    return acks, caught_up, first_seen


def _on_flow(inp: SparkFlowInput, source_topics: list[str], remotes: list[str]) -> tuple[Column, Column]:
    """End-offset samples of the flow's source partitions, and of its target partitions."""
    col = F.col
    return ((col("cluster") == inp.source) & col("topic").isin(source_topics),
            (col("cluster") == inp.target) & col("topic").isin(remotes))


def _latest_end_offsets(inp: SparkFlowInput, source_topics: list[str], remotes: list[str]):
    """End offset of the last sample in each second, per partition, for both sides."""
    if inp.lag_samples is None:
        return {}, {}
    on_source, on_target = _on_flow(inp, source_topics, remotes)
    rows = (inp.lag_samples.where(on_source | on_target)
            .groupBy(on_source.alias("is_source"), "topic", "partition",
                     _seconds("ts_ms").alias("sec"))
            .agg(F.max(F.struct("ts_ms", "end_offset")).alias("last"))
            .select("is_source", "topic", "partition", "sec", "last.end_offset").collect())
    sides: tuple[dict, dict] = ({}, {})
    for r in rows:
        sides[0 if r["is_source"] else 1][(r["topic"], r["partition"], r["sec"])] = \
            r["end_offset"]
    return sides


def _event_counts(ids: DataFrame, timeline: Sequence[TimelineEvent]) -> dict[int, tuple[int, int]]:
    """Per event index: ids first acked during it, and how many of those were lost."""
    if not timeline:
        return {}
    spark = ids.sparkSession
    events = spark.createDataFrame(
        [(i, e.start_ts_ms, e.end_ts_ms) for i, e in enumerate(timeline)],
        "i INT, start_ts LONG, end_ts LONG")
    inside = ((F.col("ack_ts") >= F.col("start_ts"))
              & (F.col("end_ts").isNull() | (F.col("ack_ts") <= F.col("end_ts"))))
    rows = (ids.where(F.col("acked")).join(F.broadcast(events), inside)
            .groupBy("i").agg(F.count(F.lit(1)).alias("acked"),
                              F.sum(F.col("lost").cast("long")).alias("lost")).collect())
    return {r["i"]: (r["acked"], r["lost"]) for r in rows}


def check_flow(inp: SparkFlowInput) -> FlowResult:
    """Every figure of one replication flow, exact, computed by Spark."""
    spark = inp.acked.sparkSession
    _require_nearest_rank(spark)
    topic_map = dict(inp.topic_map)
    source_topics = sorted(set(topic_map.values()))
    remotes = sorted(topic_map)

    ids = _flow_ids(inp, source_topics, remotes).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        tallies, latencies = _flow_tallies(ids)
        samples = _samples(ids, {
            "lost": F.col("lost"), "in_flight": F.col("in_flight"),
            "duplicates": F.col("duplicates") > 0,
            "reordered": F.col("reordered"), "misplaced": F.col("misplaced"),
            "corrupted": F.col("corrupted"), "unexpected": F.col("unexpected"),
            "uncertain_delivered": F.col("uncertain_delivered")})
        acks, caught_up, first_seen = _flow_counts(ids)
        event_counts = _event_counts(ids, inp.timeline)
        on_source, on_target = _on_flow(inp, source_topics, remotes)
        stall = spark_flow_stall(ids, inp.lag_samples, on_source | on_target, event_windows(inp.timeline))
    finally:
        ids.unpersist()

    source_ends, target_ends = _latest_end_offsets(inp, source_topics, remotes)
    series = flow_series(acks, caught_up, first_seen, source_ends, target_ends, topic_map)

    empty = LatencyStats(0, None, None, None, None)
    by_topic = {
        topic: TopicResult(
            topic=topic,
            remote_topics=tuple(sorted(r for r, s in topic_map.items() if s == topic)),
            **figure_fields(tallies.get(topic, Tally()), latencies.get(topic, empty)))
        for topic in source_topics}
    events = tuple(event_impact(e, *event_counts.get(i, (0, 0)), series.lag, stall.by_window[i])
                   for i, e in enumerate(inp.timeline))
    return FlowResult(
        source=inp.source, target=inp.target, topics=tuple(source_topics),
        topic_map=topic_map, by_topic=by_topic, series=series,
        samples=IdSamples(**samples), events=events, stall=stall,
        **figure_fields(tallies.get(None, Tally()), latencies.get(None, empty)))


# --------------------------------------------------------------------------- failover


def check_failover(inp: SparkFailoverInput) -> FailoverResult:
    """Skipped, reprocessed, RTO and RPO of one failed-over group, computed by Spark."""
    ids = _failover_ids(inp).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        r = _failover_sums(ids)
        samples = _samples(ids, {"skipped": F.col("skipped"), "rpo": F.col("rpo")})
    finally:
        ids.unpersist()

    failure = inp.failure_ts_ms
    first, last = r["rpo_first"], r["rpo_last"]
    dr_first = r["dr_first_after"]
    return FailoverResult(
        group=inp.group, strategy=inp.strategy, primary=inp.primary, dr=inp.dr,
        failure_ts_ms=failure,
        available=r["available"] or 0,
        processed=r["processed"] or 0,
        skipped=r["skipped"] or 0,
        reprocessed=r["reprocessed"] or 0,
        reprocessed_across_failover=r["across"] or 0,
        rto_s=None if dr_first is None else (dr_first - failure) / 1000,
        rpo_records=r["rpo"] or 0,
        rpo_window_s=None if first is None else (last - first) / 1000,
        rpo_first_ack_ts_ms=first,
        rpo_last_ack_ts_ms=last,
        skipped_sample=samples["skipped"],
        rpo_sample=samples["rpo"])


def _failover_ids(inp: SparkFailoverInput) -> DataFrame:
    """One row per id acked on the primary, processed by the group or acked in its DR topics,
    with its verdicts: available, skipped, reprocessed, reprocessed across the failover, in RPO."""
    col = F.col
    failure = inp.failure_ts_ms
    ids = (_primary_acks(inp).join(_reached_dr(inp), ID, "left")
           .join(_group_processings(inp), ID, "full_outer").join(_dr_acked(inp), ID, "full_outer"))
    in_primary = col("ack_ts").isNotNull()
    before = F.coalesce(col("before"), F.lit(False))
    reached_dr = F.coalesce(col("reached"), F.lit(False))
    available = (in_primary & (before | reached_dr)) | F.coalesce(col("dr_acked"),
                                                                  F.lit(False))
    return ids.select(
        *ID, "ack_ts", "n", "dr_after",
        available.alias("available"),
        (available & col("n").isNull()).alias("skipped"),
        F.coalesce(col("n") - 1, F.lit(0)).alias("reprocessed"),
        F.when(before, col("dr_n")).otherwise(0).alias("across"),
        (in_primary & (col("ack_ts") < failure) & ~reached_dr).alias("rpo"),
    )


def _group_processings(inp: SparkFailoverInput) -> DataFrame:
    """Per id the group processed on either cluster: how often, whether on the primary before
    the failure, how often on DR, and its first DR processing after the failure."""
    col = F.col
    failure = inp.failure_ts_ms
    proc = inp.processed.where((col("group") == inp.group)
                               & col("cluster").isin(inp.primary, inp.dr))
    on_primary, on_dr = col("cluster") == inp.primary, col("cluster") == inp.dr
    return proc.groupBy(*ID).agg(
        F.count(F.lit(1)).alias("n"),
        F.max(on_primary & (col("processed_ts_ms") < failure)).alias("before"),
        F.sum(on_dr.cast("long")).alias("dr_n"),
        F.min(F.when(on_dr & (col("processed_ts_ms") >= failure), col("processed_ts_ms")))
        .alias("dr_after"))


def _primary_acks(inp: SparkFailoverInput) -> DataFrame:
    """Per id acked in the group's topics on the primary, its first ack time."""
    col = F.col
    primary_topics = sorted(set(inp.topic_map.values()))
    return (inp.acked.where((col("cluster") == inp.primary) & col("topic").isin(primary_topics))
            .groupBy(*ID).agg(F.min("ack_ts_ms").alias("ack_ts")))


def _dr_acked(inp: SparkFailoverInput) -> DataFrame:
    """Ids acked in the group's own topics on DR since it was last wiped (``dr_acked``)."""
    col = F.col
    in_dr_topics = col("topic").isin(list(inp.dr_topics)) if inp.dr_topics else F.lit(False)
    since = (col("ack_ts_ms") >= inp.dr_since_ms) if inp.dr_since_ms is not None else F.lit(True)
    return (inp.acked.where((col("cluster") == inp.dr) & in_dr_topics & since)
            .select(*ID).distinct().withColumn("dr_acked", F.lit(True)))


def _reached_dr(inp: SparkFailoverInput) -> DataFrame:
    """Ids replicated to DR's remote topics of the group (``reached``)."""
    col = F.col
    return (inp.observed.where((col("cluster") == inp.dr)
                               & col("topic").isin(sorted(inp.topic_map)))
            .select(*ID).distinct().withColumn("reached", F.lit(True)))


def _failover_sums(ids: DataFrame) -> Row:
    """The group's totals over its ids, in one job."""
    col = F.col
    return ids.agg(
        F.sum(col("available").cast("long")).alias("available"),
        F.count("n").alias("processed"),
        F.sum(col("skipped").cast("long")).alias("skipped"),
        F.sum("reprocessed").alias("reprocessed"),
        F.sum("across").alias("across"),
        F.min("dr_after").alias("dr_first_after"),
        F.sum(col("rpo").cast("long")).alias("rpo"),
        F.min(F.when(col("rpo"), col("ack_ts"))).alias("rpo_first"),
        F.max(F.when(col("rpo"), col("ack_ts"))).alias("rpo_last")).collect()[0]
