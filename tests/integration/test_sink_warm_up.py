"""The warm-up opens the very producer Spark's Kafka sink then writes with, and learns the target topics' partitions.

If the warm-up's producer were another one of the pool's (settings derived differently), the
sink would still make its own at the first record and fetch the topic's metadata then: the wait
the warm-up exists to take away, with nothing failing. So this checks the producer itself: the
record the sink writes afterwards is counted by the interceptor of the producer the warm-up made.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest
from confluent_kafka.admin import NewTopic

from mirrordrill.harness.drill.replicators.pyspark_launch import replicator_jars
from mirrordrill.primitives.import_root import IMPORT_ROOT

pytestmark = pytest.mark.integration

# a local driver with the replicator's settings: warm the sink, note the producer it made, write one record
_SCRIPT = """
import json, sys, time
from pathlib import Path
from pyspark import SparkConf
from pyspark.sql import SparkSession
from mirrordrill.replicator.driver_jvm import session_settings
from mirrordrill.replicator.spark_stream import StreamPlan, kafka_sink, open_sink_producer
jars, work, target, topic = [Path(j) for j in sys.argv[1].split(",")], Path(sys.argv[2]), sys.argv[3], sys.argv[4]
conf = SparkConf().setMaster("local[1]").setAppName("sink-warm-up").setAll(session_settings(jars, work, [], "local[1]"))
spark = SparkSession.builder.config(conf=conf).getOrCreate()
metrics = work / "metrics"
plan = StreamPlan(name="east->west", source_alias="east", target_alias="west", source_bootstrap=target,
                  target_bootstrap=target, topics=(topic,), remote_topic_prefix="", checkpoint_dir=work / "cp",
                  metrics_dir=metrics)
partitions = open_sink_producer(spark, plan)
deadline = time.monotonic() + 30
while not list(metrics.glob("producer-*.json")) and time.monotonic() < deadline:
    time.sleep(0.1)
made = [p.name for p in metrics.glob("producer-*.json")]
rows = spark.createDataFrame([(topic, b"k", b"v", 1)], "topic string, key binary, value binary, partition int")
kafka_sink(rows.write, plan).save()
counted = 0
while counted < 1 and time.monotonic() < deadline + 30:
    time.sleep(0.1)
    counted = sum(p["records"] for name in made for p in json.loads((metrics / name).read_text())["partitions"])
print(json.dumps({"partitions": partitions, "made": made, "counted": counted,
                  "producers": sorted(p.name for p in metrics.glob("producer-*.json"))}))
spark.stop()
"""


def test_the_sink_writes_with_the_producer_the_warm_up_opened(wan_env, artifacts, tmp_path):
    west = wan_env.cluster("west")
    topic = f"sink-warm-up-{uuid.uuid4().hex[:8]}"
    west.create_topics([NewTopic(topic, 3, 1)])
    work = tmp_path / "driver"
    work.mkdir()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(IMPORT_ROOT), os.environ.get("PYTHONPATH", "")]),
               SPARK_LOCAL_IP="127.0.0.1")
    out = subprocess.run([sys.executable, "-c", _SCRIPT, ",".join(map(str, replicator_jars(artifacts))), str(work),
                          west.bootstrap, topic], env=env, check=True, timeout=300, capture_output=True, text=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["partitions"] == 3  # the producer asked the target for the topic's metadata
    assert len(result["made"]) == 1  # the warm-up made one producer, in the JVM's pool
    assert result["counted"] == 1, result  # and the sink's record went through it
    assert result["producers"] == result["made"]  # the sink made none of its own
