"""The data path of one flow: a Spark Structured Streaming query, Kafka source to Kafka sink.

Record N of source partition p lands in partition p of the remote topic, in order: the sink
is told the partition explicitly, each Spark task writes one source partition's records in
offset order through an idempotent producer, and ``minPartitions`` is never set (it would
split one Kafka partition across tasks and reorder it).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from mirrordrill.replicator.config.flow import MICROBATCH_TRIGGER_DEFAULT, REALTIME_TRIGGER_DEFAULT
from mirrordrill.replicator.driver_jvm import is_local
from mirrordrill.replicator.headers import LONG_BYTES_FUNCTION, PROVENANCE_HEADER, SOURCE_OFFSET_HEADER, TIMESTAMP_HEADER
from mirrordrill.replicator.planted_faults import DataPathFault
from mirrordrill.replicator.transactions import new_generation, transactional_sink

if TYPE_CHECKING:
    from pyspark import StatusTracker
    from pyspark.sql import DataFrame, DataFrameWriter, SparkSession
    from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

    from mirrordrill.replicator.mm2_format import Heartbeat

INTERCEPTOR_CLASS = "io.mirrordrill.replicator.MirrorProducerInterceptor"
TRACE_DIR_SETTING = "mirrordrill.trace.dir"  # RecordTrace.DIR_CONFIG
DISCARDING_WRITER = "io.mirrordrill.replicator.DiscardingRowWriter"  # a standby's rehearsal (``start_rehearsal``)
SINK_WARM_UP = "io.mirrordrill.replicator.SinkProducerWarmUp"  # ``open_sink_producer``

# Options Spark's Kafka source/sink manage themselves and refuse (or that would break the
# replicator's guarantees) when passed through as ``kafka.*``.
_SPARK_OWNED = {
    "group.id", "auto.offset.reset", "enable.auto.commit", "key.deserializer", "value.deserializer",
    "key.serializer", "value.serializer", "interceptor.classes", "bootstrap.servers",
}

# The producer settings a replicator must not weaken: ordering and no silent loss.
SAFE_PRODUCER_DEFAULTS = {
    "acks": "all",
    "enable.idempotence": "true",
    "max.in.flight.requests.per.connection": "5",
    "delivery.timeout.ms": "120000",
    "linger.ms": "5",
    "batch.size": "262144",
    "compression.type": "none",
}


# A micro-batch task reads its partition through Spark's KafkaDataConsumer, which asks the source
# for the partition's earliest and latest offsets (two ListOffsets round trips over the WAN) on
# every poll and seeks back, dropping what the consumer had fetched ahead. With Kafka's defaults
# (500 records a poll, 1 MB a fetch) that capped one task at ~14k records/s of 1 KB over a 5 ms
# WAN whatever the CPU did (a profile showed the task thread waiting in KafkaConsumer.position);
# larger polls amortise the round trips. Real-time tasks read continuously and gained nothing,
# so they keep Kafka's defaults
# (see docs/measurements/behind-the-code.md#replicator-spark-stream-py). A setting the flow gives wins.
MICROBATCH_CONSUMER_DEFAULTS = {
    "max.poll.records": "5000",
    "max.partition.fetch.bytes": str(8 * 1024 * 1024),
}


@dataclass(frozen=True)
class StreamPlan:
    """Everything one flow's query needs, already resolved to addresses and names."""

    name: str  # "A->B"
    source_alias: str
    target_alias: str
    source_bootstrap: str
    target_bootstrap: str
    topics: tuple[str, ...]  # source topics, already selected by the flow's filters
    remote_topic_prefix: str  # "" for the identity policy, "A." for the default policy
    checkpoint_dir: Path
    metrics_dir: Path
    # "B." when the flow restores the target B's history: a source topic "B.t" is written as "t"
    # (only such copies start with it: any other name showing B is a cycle and never selected)
    restored_prefix: str = ""
    # of those copies, the history: (topic, partition, end offset), see replicator.history
    history_ends: tuple[tuple[str, int, int], ...] = ()
    mode: str = "microbatch"  # or "realtime"
    trigger_interval: str | None = None
    max_offsets_per_trigger: int | None = None
    starting_offsets: str = "earliest"
    use_provenance: bool = False
    consumer: dict[str, str] = field(default_factory=dict)
    producer: dict[str, str] = field(default_factory=dict)
    # the mutation suite's planted fault (replicator.planted_faults); None in real runs
    planted: DataPathFault | None = None
    # set: write through transactional producers whose ids start with it, one per target
    # partition (replicator.transactions); None: through Spark's Kafka sink
    transactional_ids: str | None = None
    commit_interval_ms: int = 100
    # set: the sink's producer writes each record's send and acknowledgement times there (RecordTrace)
    trace_dir: Path | None = None

    def remote_topics(self) -> tuple[str, ...]:
        """The target topics the sink writes to (``transform`` names them alike); the topic sync made them all."""
        restored = self.restored_prefix
        return tuple(t[len(restored):] if restored and t.startswith(restored) else self.remote_topic_prefix + t
                     for t in self.topics)

    def producer_settings(self) -> dict[str, str]:
        return {**SAFE_PRODUCER_DEFAULTS, **{k: v for k, v in self.producer.items() if k not in _SPARK_OWNED}}

    def consumer_settings(self) -> dict[str, str]:
        defaults = MICROBATCH_CONSUMER_DEFAULTS if self.mode == "microbatch" else {}
        return {**defaults, **{k: v for k, v in self.consumer.items() if k not in _SPARK_OWNED}}


def _bytes8(col_sql: str) -> str:
    """SQL for a BIGINT as 8 big-endian bytes (offsets, epoch millis), through the replicator's jar."""
    return f"{LONG_BYTES_FUNCTION}({col_sql})"


def transform(df: DataFrame, plan: StreamPlan) -> DataFrame:
    """Source rows -> sink rows: remote topic name, same partition, headers carrying provenance."""
    from pyspark.sql import functions as F

    internal = ", ".join(f"'{h}'" for h in (TIMESTAMP_HEADER, SOURCE_OFFSET_HEADER, PROVENANCE_HEADER))
    user_headers = f"filter(coalesce(headers, array()), h -> h.key NOT IN ({internal}))"
    added = [
        f"named_struct('key', '{TIMESTAMP_HEADER}', 'value', {_bytes8('unix_millis(timestamp)')})",
        f"named_struct('key', '{SOURCE_OFFSET_HEADER}', 'value', {_bytes8('offset')})",
    ]
    if plan.use_provenance:
        # Identity names carry no history, so the clusters a record passed through travel with
        # it; a record that already visited the target is dropped instead of looping.
        # try_element_at: Spark 4 runs ANSI SQL, where element_at of an empty array is an error
        prov = (f"try_element_at(transform(filter(coalesce(headers, array()), h -> h.key = '{PROVENANCE_HEADER}'), "
                f"h -> cast(h.value as string)), -1)")
        df = df.withColumn("_prov", F.expr(prov)).where(
            F.expr(f"_prov IS NULL OR NOT array_contains(split(_prov, ','), '{plan.target_alias}')"))
        added.append(f"named_struct('key', '{PROVENANCE_HEADER}', 'value', "
                     f"cast(concat_ws(',', _prov, '{plan.source_alias}') as binary))")
    else:
        # keep a provenance header from an upstream identity hop untouched
        user_headers = f"filter(coalesce(headers, array()), h -> h.key NOT IN ('{TIMESTAMP_HEADER}', '{SOURCE_OFFSET_HEADER}'))"
    headers = f"concat({user_headers}, array({', '.join(added)}))"
    topic = F.concat(F.lit(plan.remote_topic_prefix), F.col("topic")) if plan.remote_topic_prefix else F.col("topic")
    if plan.restored_prefix:
        # past a partition's history come the re-protect's copies of what the rebuilt target
        # already holds: restored again, they would loop (Kafka topic names need no SQL quoting)
        history = " OR ".join(f"(topic = '{t}' AND partition = {p} AND offset < {e})"
                              for t, p, e in plan.history_ends) or "false"
        df = df.where(~F.col("topic").startswith(plan.restored_prefix) | F.expr(history))
        topic = F.when(F.col("topic").startswith(plan.restored_prefix),
                       F.expr(f"substring(topic, {len(plan.restored_prefix) + 1})")).otherwise(topic)
    return df.select(topic.alias("topic"), "key", "value", "partition", F.expr(headers).alias("headers"))


def _read_kafka(reader: Any, plan: StreamPlan) -> Any:
    """The flow's Kafka source options on a batch or a streaming reader."""
    # Any: pyspark's DataFrameReader and DataStreamReader share these methods but no base class.
    reader = (reader.format("kafka")
              .option("kafka.bootstrap.servers", plan.source_bootstrap)
              .option("subscribe", ",".join(plan.topics))
              .option("includeHeaders", "true")
              # A source offset that vanished (retention, a wiped cluster) is reported in the
              # log and skipped, as MM2's consumer does, rather than stopping replication forever.
              .option("failOnDataLoss", "false"))
    for k, v in plan.consumer_settings().items():
        reader = reader.option(f"kafka.{k}", v)
    return reader


# pyspark's batch and streaming writers share the sink's methods but no base class.
SinkWriter = TypeVar("SinkWriter", "DataFrameWriter", "DataStreamWriter")


def sink_producer_config(plan: StreamPlan) -> dict[str, str]:
    """The settings of the producer the flow's sink writes with, whichever sink it is."""
    trace = {} if plan.trace_dir is None else {TRACE_DIR_SETTING: str(plan.trace_dir)}
    return {"bootstrap.servers": plan.target_bootstrap, "interceptor.classes": INTERCEPTOR_CLASS,
            "mirrordrill.metrics.dir": str(plan.metrics_dir), **trace, **plan.producer_settings()}


def kafka_sink(writer: SinkWriter, plan: StreamPlan) -> SinkWriter:
    """The flow's Kafka sink options on a batch or a streaming writer."""
    writer = writer.format("kafka")
    for k, v in sink_producer_config(plan).items():
        writer = writer.option(f"kafka.{k}", v)
    return writer


# Heartbeats the warm-up writes through the sink and reads back through the source. Enough calls
# for the JVM to compile (C1 compiles a method after ~200 invocations) the Kafka producer's and
# consumer's per-record paths and the row converters, which an empty batch never runs: without
# them the first records of a drill met interpreted code on every flow at once (fan-out, three
# flows on 2 cores: the first records waited 420-560 ms against ~110 ms with them).
WARM_HEARTBEATS = 300


def warm_up(spark: SparkSession, plan: StreamPlan, heartbeats: Callable[[], Heartbeat] | None = None,
            heartbeats_topic: str = "") -> dict[str, float]:
    """Run the flow's read-transform-write once as batch jobs, before any record of the flow moves.

    A fresh Spark spends seconds on the first batch of a query (class loading, code
    generation, the sink's producer). It runs beside the process's first query, not before
    it (records waiting after a restart move as soon as the query's tasks get going), and
    the replicator counts as live only once it is done, so the first records a drill sends
    after readiness do not wait for that cost (measured: real-time tasks all running, yet
    75 s before the first record moved on a loaded machine).

    When the flow emits heartbeats (``heartbeats`` makes them, as the flow's own emitter does),
    ``WARM_HEARTBEATS`` of them go to the target's heartbeats topic through the flow's sink (the
    same pooled producer the query writes with) and, in micro-batch mode, come back through the
    Kafka source and ``transform`` into Spark's no-op sink: records MM2's tooling reads as
    heartbeats, nothing else on the target. That runs the per-record paths hot, which an empty
    batch never does. A real-time flow's warm-up runs beside its running query and skips the way
    back (below), unless its connections are secured.
    Otherwise an empty range of the flow's own topics opens its sink producer and plans its
    transform (``_empty_range``). The round trip does not need the empty range first: it opens
    the same producer and compiles the same transform. Dropping it shortened the warm-up: the
    round trip took longer alone, as it now pays the first job's cost, but less than both together
    (see docs/measurements/behind-the-code.md#replicator-spark-stream-py).

    Last, on a local master, the sink's producer fetches the flow's target topics' metadata
    (``open_sink_producer``). Returns the seconds each part took, for the log: where a slow start went.
    """
    steps = _warm_query_path(spark, plan, heartbeats, heartbeats_topic)
    if plan.transactional_ids is None and plan.topics and is_local(spark.sparkContext.master or ""):
        started = time.monotonic()
        open_sink_producer(spark, plan)
        steps["sink's topics"] = time.monotonic() - started
    return steps


def open_sink_producer(spark: SparkSession, plan: StreamPlan) -> int:
    """The sink's producer taken in Spark's producer pool, with the metadata of the flow's target topics; their
    partition count.

    Spark's Kafka sink learns a topic's partitions at the topic's first record, inside the task's
    ``send``: the records behind it in the task waited a metadata round trip to the target too, a
    WAN's where the replicator runs beside the source (the warm-up's heartbeats and empty range open
    the same pooled producer, not these topics;
    see docs/measurements/behind-the-code.md#replicator-spark-stream-py).
    The pool is the JVM's: with a local master the query's tasks take this producer, on a cluster
    each executor has its own pool (``warm_up`` asks only then). The plan's topics are the topic
    sync's, made on the target before any query: a producer's metadata request for a missing topic
    would create it where the broker auto-creates topics."""
    jvm = spark.sparkContext._jvm
    if jvm is None:
        raise RuntimeError("the Spark session's JVM gateway is closed")
    options = jvm.java.util.HashMap()
    for key, value in sink_producer_config(plan).items():
        options.put(f"kafka.{key}", value)
    topics = jvm.java.util.ArrayList()
    for topic in plan.remote_topics():
        topics.add(topic)
    return int(getattr(jvm, SINK_WARM_UP).warm(options, topics))


def _warm_query_path(spark: SparkSession, plan: StreamPlan, heartbeats: Callable[[], Heartbeat] | None,
                     heartbeats_topic: str) -> dict[str, float]:
    started = time.monotonic()
    if heartbeats is not None and heartbeats_topic:
        since_ms = int(time.time() * 1000)
        _write_heartbeats(spark, plan, heartbeats, heartbeats_topic)
        there_s = time.monotonic() - started
        # Over TLS/SASL the way back is kept in real time too: without it the query's first copy
        # after readiness pays the JVM's first secured consumer path, and the records sent in the
        # load's first seconds wait for it (secure-failover's p99 is where that shows).
        secured = any(k.startswith(("security.", "sasl.", "ssl.")) for k in plan.producer_settings())
        if plan.mode == "realtime" and not secured:
            # The way back is a batch job beside the query's own tasks, which are running by then:
            # they opened the Kafka source's consumer and planned the transform, and the load's
            # first records take its per-record paths. On two cores it held readiness back by
            # seconds and its latency gain was small
            # (see docs/measurements/behind-the-code.md#replicator-spark-stream-py).
            return {f"{WARM_HEARTBEATS} heartbeats there": there_s}
        _read_heartbeats_back(spark, plan, heartbeats_topic, since_ms)
        return {f"{WARM_HEARTBEATS} heartbeats there": there_s, "and back": time.monotonic() - started - there_s}
    _empty_range(spark, plan)
    return {"empty range": time.monotonic() - started}


def _empty_range(spark: SparkSession, plan: StreamPlan) -> None:
    """The flow's read-transform-write over its own topics, from the current end of every partition to the
    same end, and filtered to no row."""
    future_ms = int((time.time() + 86_400) * 1000)
    source = (_read_kafka(spark.read, plan)
              # "latest" is refused as a batch start; a timestamp past every record, falling
              # back to the latest offset, is the same position.
              .option("startingTimestamp", str(future_ms))
              .option("startingOffsetsByTimestampStrategy", "latest")
              .option("endingOffsets", "latest")
              # bounded: an unreachable source must not hold the control plane for minutes
              .option("fetchOffset.numRetries", "1")
              .option("kafka.request.timeout.ms", "10000")
              .option("kafka.default.api.timeout.ms", "15000"))
    # Never write: "latest" as a start and as an end are resolved at two moments, so under load
    # the range holds the records produced between them. A warm-up that copied them (newest
    # records, ahead of the query) made a restart resume after them and skip everything between
    # (test_pyspark_resume: 750 records lost), and copied a backlog record twice. The filter is
    # not a constant (Spark would prune the plan to nothing and warm nothing up): offsets are >= 0.
    from pyspark.sql import functions as F
    rows = source.load().where(F.col("offset") < F.lit(0))
    # batch writes go through Spark's V1 Kafka writer, which takes its producer from the pool
    # before the first row: an empty range opens it too
    kafka_sink(transform(rows, plan).write, plan).save()


def _write_heartbeats(spark: SparkSession, plan: StreamPlan, heartbeats: Callable[[], Heartbeat],
                      topic: str) -> None:
    """``WARM_HEARTBEATS`` heartbeats into the target's heartbeats topic, through the flow's sink."""
    from pyspark.sql import functions as F
    # One heartbeat, WARM_HEARTBEATS times, made in the JVM: rows built from Python objects
    # (createDataFrame) go through a Python RDD, whose Python worker the replicator needs for
    # nothing else, and starting it cost seconds of the warm-up
    # (see docs/measurements/behind-the-code.md#replicator-spark-stream-py).
    beat = heartbeats()
    written = spark.range(0, WARM_HEARTBEATS, 1, 1).select(  # one partition: one task slot
        F.lit(topic).alias("topic"), F.lit(bytearray(beat.key())).alias("key"),
        F.lit(bytearray(beat.value())).alias("value"))
    kafka_sink(written.write, plan).save()


def _read_heartbeats_back(spark: SparkSession, plan: StreamPlan, topic: str, since_ms: int) -> None:
    """The heartbeats written from ``since_ms`` on, read from the target through ``transform`` into Spark's no-op sink."""
    # from the target (the flow's source settings are for the source cluster), and only what was
    # written from ``since_ms`` on, so a long-lived heartbeats topic is not read whole
    back = (spark.read.format("kafka")
            .option("kafka.bootstrap.servers", plan.target_bootstrap)
            .option("subscribe", topic)
            .option("includeHeaders", "true")
            .option("startingTimestamp", str(since_ms))
            .option("startingOffsetsByTimestampStrategy", "latest")
            .option("endingOffsets", "latest"))
    for k, v in plan.producer_settings().items():
        if k.startswith(("security.", "sasl.", "ssl.")):  # the target's connection, not the producer's tuning
            back = back.option(f"kafka.{k}", v)
    transform(back.load(), plan).write.format("noop").mode("overwrite").save()


def start_query(spark: SparkSession, plan: StreamPlan) -> StreamingQuery:
    """Start the flow's streaming query (resuming from its checkpoint if one exists)."""
    out = _sink_rows(spark, plan)
    if plan.transactional_ids is not None:
        sink = transactional_sink(out.writeStream, spark, sink_producer_config(plan), plan.transactional_ids,
                                  plan.commit_interval_ms, new_generation())
    else:
        sink = kafka_sink(out.writeStream, plan)
    return _start(sink, plan)


def start_rehearsal(spark: SparkSession, plan: StreamPlan) -> StreamingQuery:
    """The flow's query from the source's newest offsets into a writer that writes nothing (``DISCARDING_WRITER``):
    every record it reads goes through ``transform``, none reaches the target. Its checkpoint is the flow's
    own (the next query start empties it)."""
    out = _sink_rows(spark, replace(plan, starting_offsets="latest"))
    jvm = spark.sparkContext._jvm
    if jvm is None:
        raise RuntimeError("the Spark session's JVM gateway is closed")
    sink = out.writeStream
    sink._jwrite.foreach(getattr(jvm, DISCARDING_WRITER)())  # as ``transactional_sink`` attaches its writer
    return _start(sink, plan)


def _sink_rows(spark: SparkSession, plan: StreamPlan) -> DataFrame:
    reader = _read_kafka(spark.readStream, plan).option("startingOffsets", plan.starting_offsets)
    if plan.max_offsets_per_trigger and plan.mode == "microbatch":
        reader = reader.option("maxOffsetsPerTrigger", str(plan.max_offsets_per_trigger))
    return transform(_planted(reader.load(), plan.planted) if plan.planted else reader.load(), plan)


def _start(sink: DataStreamWriter, plan: StreamPlan) -> StreamingQuery:
    writer = (sink
              .queryName(plan.name)
              .option("checkpointLocation", str(plan.checkpoint_dir)))
    if plan.mode == "realtime":
        writer = writer.outputMode("update").trigger(  # type: ignore[call-overload]  # pyspark's overloads lack realTime
            realTime=plan.trigger_interval or REALTIME_TRIGGER_DEFAULT)  # (the method itself takes it)
    else:
        writer = writer.trigger(processingTime=plan.trigger_interval or MICROBATCH_TRIGGER_DEFAULT)
    return writer.start()


def _planted(source: DataFrame, fault: DataPathFault) -> DataFrame:
    """The mutation suite's wrong copy: the record at offset 10 of every N in a partition left out or written twice."""
    from pyspark.sql import functions as F
    if fault.drop_every:
        source = source.where(F.col("offset") % fault.drop_every != 10)
    if fault.duplicate_every:
        # a stateless generator, which real-time mode allows: two rows for the chosen record, one for the rest
        twice = F.when(F.col("offset") % fault.duplicate_every == 10, F.array(F.lit(1), F.lit(2)))
        source = source.withColumn("_planted", F.explode(twice.otherwise(F.array(F.lit(1))))).drop("_planted")
    return source


def tasks_running(spark: SparkSession, run_id: str) -> bool:
    """Whether every task of a running stage of the query's jobs has started (its job group is its run id).

    A real-time batch lasts the whole trigger interval, so its first progress report comes late;
    once all its tasks run (one per partition), they read and write as records arrive."""
    tracker = spark.sparkContext.statusTracker()
    for job_id in tracker.getJobIdsForGroup(str(run_id)):
        job = tracker.getJobInfo(job_id)
        for stage_id in (job.stageIds if job is not None and job.status == "RUNNING" else ()):
            stage = tracker.getStageInfo(stage_id)
            if stage is not None and 0 < stage.numTasks <= stage.numActiveTasks:
                return True
    return False


# The loggers through which Spark reports the tasks a query stop cancels. A real-time batch
# runs for the whole trigger interval, so stopping the query (at shutdown, or to pick up a new
# topic) always interrupts its Kafka reads mid-batch; Spark then logs each cancelled task as an
# aborted write, with a stack trace (an InterruptException), although nothing failed: the
# batch is not committed and the next query resumes from the checkpoint. These loggers are
# silenced only around a stop the replicator asked for; a query that fails on its own is
# untouched, and the replicator logs its exception (see ``FlowRuntime.tick``).
CANCELLED_TASK_LOGGERS = (
    "org.apache.spark.util.Utils",  # "Aborting task" + trace
    "org.apache.spark.sql.execution.datasources.v2",  # DataWritingSparkTask, WriteToDataSourceV2Exec
    "org.apache.spark.scheduler.TaskSetManager",  # "Lost task ... TaskKilled"
    "org.apache.spark.scheduler.DAGScheduler",  # "Failed to cancel job group"
)


class QuietStops:
    """Silences ``CANCELLED_TASK_LOGGERS`` while any query stop the process asked for is under way.

    Counted, under a lock: flows stop their queries on their own threads (``control_threads``),
    and a second stop that began while the first had the loggers off must not take "off" for the
    level to restore."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stopping = 0
        self._levels: dict[str, object] = {}

    def enter(self, spark: SparkSession) -> None:
        jvm = spark.sparkContext._jvm
        if jvm is None:
            raise RuntimeError("the Spark session's JVM gateway is closed")
        with self._lock:
            if self._stopping == 0:
                manager = jvm.org.apache.logging.log4j.LogManager
                self._levels = {name: manager.getLogger(name).getLevel() for name in CANCELLED_TASK_LOGGERS}
                for name in self._levels:
                    jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
                        name, jvm.org.apache.logging.log4j.Level.OFF)
            self._stopping += 1

    def leave(self, spark: SparkSession) -> None:
        jvm = spark.sparkContext._jvm
        if jvm is None:
            raise RuntimeError("the Spark session's JVM gateway is closed")
        with self._lock:
            self._stopping -= 1
            if self._stopping == 0:
                for name, level in self._levels.items():
                    jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(name, level)


def stop_query(spark: SparkSession, query: StreamingQuery, quiet: QuietStops, settle_s: float = 5.0) -> None:
    """Stop a query on purpose without logging its cancelled tasks as failures (see above).

    Waits (up to ``settle_s``) for the query's cancelled tasks to finish before the loggers are
    restored, since the executor reports them after ``stop()`` returns. Only this query's jobs
    (its job group is its run id): the process's other flows keep theirs running."""
    run_id = str(query.runId)
    quiet.enter(spark)
    try:
        query.stop()
        deadline = time.monotonic() + settle_s
        tracker = spark.sparkContext.statusTracker()
        while _running_jobs(tracker, run_id) and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        quiet.leave(spark)


def _running_jobs(tracker: StatusTracker, run_id: str) -> list[int]:
    jobs = ((j, tracker.getJobInfo(j)) for j in tracker.getJobIdsForGroup(run_id))
    return [j for j, info in jobs if info is not None and info.status == "RUNNING"]
