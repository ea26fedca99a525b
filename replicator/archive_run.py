"""The run whose loaded classes become the driver's class-data archive (``driver_jvm.make_archive``).

``python -m mirrordrill.replicator.archive_run ARCHIVE JARS [BOOTSTRAP]``. It starts a Spark session with
the replicator's own settings and class path, and the JVM dumps every class it loaded into
ARCHIVE when it exits. With a broker (BOOTSTRAP, plaintext, one the caller owns) it then does
what a replicator start does, through the replicator's own ``spark_stream`` functions: the
empty-range warm-up, a batch write through the sink, and a real-time and a micro-batch query
that copy records between two topics of that broker. So the Kafka source and sink, the
streaming engine of both modes, the code generator and the transform's expressions are in the
archive. Without one, only the session and a SQL query's classes are.

With Kafka's and the streaming engine's classes in the archive a restart's first record moves
seconds sooner than with an archive of the session and SQL only
(see docs/measurements/behind-the-code.md#replicator-archive-run-py).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from mirrordrill.primitives.jvm_archive import dump_flags

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ROUND_TRIP_RECORDS = 600  # per query: enough calls for the per-record paths to be loaded, several times over
ROUND_TRIP_TIMEOUT_S = 120.0


def main(archive: str, jars: list[Path], bootstrap: str) -> None:
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    from mirrordrill.replicator.driver_jvm import jit_flags, session_settings
    from mirrordrill.replicator.headers import LONG_BYTES_FUNCTION, register_long_bytes

    tmp = Path(tempfile.mkdtemp(prefix="mirrordrill-archive-run-"))
    master = "local[6]"
    # C1 only, as the replicator's default: the run is as short, and an archive holds classes, not compiled code
    flags = [*jit_flags("c1"), *dump_flags(Path(archive))]
    conf = SparkConf().setMaster(master).setAppName("mirrordrill-class-archive").setAll(
        session_settings(jars, tmp, flags, master))
    spark = SparkSession.builder.config(conf=conf).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register_long_bytes(spark)
    gateway = SparkContext._gateway
    if gateway is None:
        raise RuntimeError("the Spark session started without a JVM gateway")
    proc = gateway.proc
    try:
        spark.range(100).selectExpr("concat('t.', cast(id as string)) as topic", f"{LONG_BYTES_FUNCTION}(id) as v",
                                    "filter(array(named_struct('key', 'k', 'value', cast('x' as binary))), "
                                    "h -> h.key NOT IN ('a'))").collect()
        if bootstrap:
            _replicate(spark, bootstrap, tmp)
    finally:
        spark.stop()
        proc.stdin.close()  # the JVM exits on end of input, then writes the archive
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def _replicate(spark: SparkSession, bootstrap: str, tmp: Path) -> None:
    """Copy records from one topic of the broker to another, in each mode, as a replicator does."""
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    from mirrordrill.replicator.spark_stream import QuietStops, StreamPlan, kafka_sink, start_query, stop_query, warm_up

    source, remote_prefix, partitions = "mirrordrill-archive-run", "copy.", 3
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, partitions, 1) for t in (source, remote_prefix + source)]).values():
        future.result(30)

    def plan(mode: str, provenance: bool) -> StreamPlan:
        return StreamPlan(name=f"archive-run-{mode}", source_alias="a", target_alias="b", source_bootstrap=bootstrap,
                          target_bootstrap=bootstrap, topics=(source,), remote_topic_prefix=remote_prefix,
                          checkpoint_dir=tmp / f"checkpoint-{mode}", metrics_dir=tmp / "metrics", mode=mode,
                          use_provenance=provenance)

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "mirrordrill-archive-run"})

    def copied() -> int:
        return sum(consumer.get_watermark_offsets(TopicPartition(remote_prefix + source, p), timeout=10)[1]
                   for p in range(partitions))

    rows = spark.createDataFrame([(source, f"k{i}".encode(), b"x" * 100, i % partitions)
                                  for i in range(ROUND_TRIP_RECORDS)],
                                 "topic string, key binary, value binary, partition int")
    try:
        first = plan("realtime", provenance=False)
        kafka_sink(rows.write, first).save()
        warm_up(spark, first)
        for mode, provenance in (("realtime", False), ("microbatch", True)):
            before = copied()
            query = start_query(spark, plan(mode, provenance))
            deadline = time.monotonic() + ROUND_TRIP_TIMEOUT_S
            while copied() < before + ROUND_TRIP_RECORDS and time.monotonic() < deadline:
                time.sleep(0.5)
            kafka_sink(rows.write, first).save()  # the next query's records (and these, copied live)
            time.sleep(2)
            stop_query(spark, query, QuietStops())  # as the replicator stops one: its cancelled tasks unlogged
            if copied() < before + ROUND_TRIP_RECORDS:
                raise RuntimeError(f"the {mode} query copied {copied() - before} of {ROUND_TRIP_RECORDS} records "
                                   f"within {ROUND_TRIP_TIMEOUT_S:.0f}s")
    finally:
        consumer.close()


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print("usage: python -m mirrordrill.replicator.archive_run ARCHIVE JAR[,JAR...] BOOTSTRAP|''", file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1], [Path(j) for j in sys.argv[2].split(",") if j], sys.argv[3])
