"""The stall (``harness.drill.checker.stall``) on Spark DataFrames, computed apart from the plain
Python sweep, so the agreement tests compare two computations of it.

Per source partition and millisecond: how many records became outstanding or stopped being, and
whether a copy arrived. A running sum gives the records outstanding after each millisecond; a stall
opens where that is above zero and either a copy arrived or nothing was outstanding before; it
lasts until the next arrival, or the end of the observation. Only one row per partition reaches
the driver.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame
from pyspark.sql import Window as Frame
from pyspark.sql import functions as F

from mirrordrill.harness.drill.checker.stall import FlowStall, PartitionStall, Window, stall_of_partitions

_PARTITION = ("topic", "a_partition")


def _per_millisecond(acked: DataFrame) -> DataFrame:
    """``(topic, a_partition, t, d, arrival)``: the change in outstanding records at ``t`` and
    whether a first copy of the partition arrived then."""
    col = F.col
    held = col("seen_ts").isNull() | (col("seen_ts") > col("ack_ts"))
    events = F.array_compact(F.array(
        F.when(held, F.struct(col("ack_ts").alias("t"), F.lit(1).alias("d"), F.lit(False).alias("arrival"))),
        F.when(col("seen_ts").isNotNull(),
               F.struct(col("seen_ts").alias("t"), F.when(held, F.lit(-1)).otherwise(F.lit(0)).alias("d"),
                        F.lit(True).alias("arrival")))))
    return (acked.select(*_PARTITION, F.explode(events).alias("e"))
            .groupBy(*_PARTITION, F.col("e.t").alias("t"))
            .agg(F.sum("e.d").alias("d"), F.max("e.arrival").alias("arrival")))


def _observation_end(ids: DataFrame, samples: DataFrame | None, on_flow: Column | None) -> int | None:
    """The flow's latest first ack, first sighting or end-offset sample."""
    row = ids.agg(F.max("ack_ts").alias("a"), F.max("seen_ts").alias("s")).collect()[0]
    times = [row["a"], row["s"]]
    if samples is not None and on_flow is not None:
        times.append(samples.where(on_flow).agg(F.max("ts_ms")).collect()[0][0])
    known = [t for t in times if t is not None]
    return max(known) if known else None


def spark_flow_stall(ids: DataFrame, samples: DataFrame | None, on_flow: Column | None,
                     windows: Sequence[Window] = ()) -> FlowStall:
    """The flow's stall from the checker's one-row-per-id frame (``spark._flow_ids``), and the longest
    overlapping each window (``stall.flow_stall``).

    ``samples``: the end-offset history, ``on_flow`` selecting the flow's partitions in it.
    """
    col = F.col
    end = _observation_end(ids, samples, on_flow)
    if end is None:
        return stall_of_partitions({}, (0,) * len(windows))
    in_time = Frame.partitionBy(*_PARTITION).orderBy("t")
    counted = _per_millisecond(ids.where(col("acked"))).withColumn(
        "n", F.sum("d").over(in_time.rowsBetween(Frame.unboundedPreceding, Frame.currentRow)))
    later = Frame.partitionBy(*_PARTITION).orderBy(col("t").desc()).rowsBetween(Frame.unboundedPreceding, -1)
    opens = (col("n") > 0) & (col("arrival") | (F.coalesce(F.lag("n").over(in_time), F.lit(0)) == 0))
    length = F.coalesce(F.min(F.when(col("arrival"), col("t"))).over(later), F.lit(end)) - col("t")
    stalls = (counted.select(*_PARTITION, "t", opens.alias("opens"), length.alias("ms"))
              .persist(StorageLevel.MEMORY_AND_DISK))
    try:
        rows = (stalls.groupBy(*_PARTITION)
                .agg(F.max(F.when(col("opens") & (col("ms") > 0),
                                  F.struct("ms", (-col("t")).alias("neg_start")))).alias("best"))
                .collect())
        by_window = _longest_per_window(stalls.where(col("opens") & (col("ms") > 0)), windows)
    finally:
        stalls.unpersist()
    by_partition = {
        (r["topic"], r["a_partition"]):
            PartitionStall(0, None) if r["best"] is None else PartitionStall(r["best"]["ms"], -r["best"]["neg_start"])
        for r in rows}
    return stall_of_partitions(by_partition, by_window)


def _longest_per_window(stalls: DataFrame, windows: Sequence[Window]) -> tuple[int, ...]:
    """Per window, the longest of ``stalls`` (``t``, ``ms``) overlapping it (``stall.overlaps``)."""
    if not windows:
        return ()
    frame = stalls.sparkSession.createDataFrame(
        [(i, lo, hi) for i, (lo, hi) in enumerate(windows)], "i INT, lo LONG, hi LONG")
    col = F.col
    overlapping = (col("t") + col("ms") > col("lo")) & (col("hi").isNull() | (col("t") <= col("hi")))
    longest: dict[int, int] = dict(stalls.join(F.broadcast(frame), overlapping).groupBy("i").agg(F.max("ms")).collect())
    return tuple(int(longest.get(i, 0)) for i in range(len(windows)))
