"""The driver's class-data archive holds what a replicator's start loads, mapped on its class path.

An archive the JVM does not map (another class path) or one without Kafka's classes fails
nothing: starts just get slower again, by 2.4 s on a restart (the crash drill, 2026-11-27). So
this checks the classes themselves, in a JVM started with the replicator's own settings.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from mirrordrill.harness.drill.replicators.class_archive import make_class_archive
from mirrordrill.harness.drill.replicators.pyspark_launch import cds_archive_path, replicator_jars
from mirrordrill.primitives.import_root import IMPORT_ROOT

pytestmark = pytest.mark.integration

# a driver JVM started as the replicator starts it, mapping the archive, logging where each class came from
_CHECK = """
import sys
from pathlib import Path
from pyspark import SparkConf
from pyspark.sql import SparkSession
from mirrordrill.replicator.driver_jvm import CDS_ENV, driver_jvm_flags, jit_flags, session_settings
archive, jars, log, tmp = sys.argv[1], [Path(j) for j in sys.argv[2].split(",")], sys.argv[3], Path(sys.argv[4])
flags = [*jit_flags("c1"), *driver_jvm_flags({CDS_ENV: archive}), f"-Xlog:class+load=info:file={log}"]
conf = SparkConf().setMaster("local[1]").setAppName("archive-check").setAll(session_settings(jars, tmp, flags, "local[1]"))
spark = SparkSession.builder.config(conf=conf).getOrCreate()
for name in sys.argv[5:]:
    spark._jvm.java.lang.Class.forName(name)
spark.stop()
"""

# Kafka's client, Spark's Kafka connector, our interceptor (all three from the driver's class
# path, not spark.jars) and the streaming engine: none of them is loaded by the session alone
CLASSES = (
    "org.apache.kafka.clients.producer.KafkaProducer",
    "org.apache.kafka.clients.consumer.KafkaConsumer",
    "org.apache.spark.sql.kafka010.KafkaSourceProvider",
    "io.mirrordrill.replicator.MirrorProducerInterceptor",
    "org.apache.spark.sql.execution.streaming.runtime.MicroBatchExecution",
)


def test_the_archive_maps_kafkas_classes_and_the_streaming_engine(artifacts, tmp_path):
    # the archive a local replicator start maps: the machine's one (its name keys the JDK, Python,
    # jars and archive run), made here as the first start would make it when no start has yet
    jars = replicator_jars(artifacts)
    archive = cds_archive_path(artifacts.java, jars)
    if not archive.is_file():
        assert make_class_archive(archive, jars, print, artifacts), archive.with_suffix(".log").read_text()[-3000:]

    log = tmp_path / "class-load.log"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(IMPORT_ROOT), os.environ.get("PYTHONPATH", "")]),
               SPARK_LOCAL_IP="127.0.0.1")
    (tmp_path / "spark-tmp").mkdir()
    subprocess.run([sys.executable, "-c", _CHECK, str(archive), ",".join(map(str, jars)), str(log),
                    str(tmp_path / "spark-tmp"), *CLASSES], env=env, check=True, timeout=300)
    sources = {}
    for line in log.read_text().splitlines():
        name, _, source = line.partition(" source: ")
        sources[name.rsplit(" ", 1)[-1]] = source
    # "shared objects file (top)": the dynamic archive, on top of the JDK's own
    assert {name: sources.get(name, "").split(" (")[0] for name in CLASSES} == {name: "shared objects file" for name in CLASSES}
