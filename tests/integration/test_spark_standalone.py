"""The PySpark replicator on a Spark standalone cluster: start on loopback, submit, replicate, lose a worker."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from confluent_kafka.admin import NewTopic

from mirrordrill.harness.drill.replicators.pyspark import PySparkReplicator
from mirrordrill.harness.drill.replicators.setup import FlowSpec, ReplicationSetup
from mirrordrill.harness.lab.brokers.cluster import ClusterSpec
from mirrordrill.harness.lab.environment import Environment, TopologySpec
from mirrordrill.harness.lab.spark.deployment import SparkDeployment, SparkDeploymentError

from .kafka_helpers import read_records, unique_topic, wait_for
from .test_pyspark_replicator import produce

pytestmark = pytest.mark.integration

TOPIC = unique_topic("sps")


@pytest.fixture(scope="module")
def spark_env(artifacts, session_workdir, lab_backend):
    spec = TopologySpec(clusters=(ClusterSpec("east"), ClusterSpec("west")))
    with Environment(spec, session_workdir / "spark-standalone-env", artifacts,
                     backend=lab_backend.make("spark-standalone")) as env:
        env.cluster("east").create_topics([NewTopic(TOPIC, 3, 1)])
        yield env


@pytest.fixture(scope="module")
def repl(spark_env, artifacts):
    setup = ReplicationSetup(env=spark_env, flows=[FlowSpec("east", "west", topics=[TOPIC])],
                             workdir=spark_env.workdir / "replicator")
    r = PySparkReplicator(setup, artifacts=artifacts, mode="microbatch",
                          spark=SparkDeployment("standalone", executors=2, executor_cores=1))
    with r:
        yield r


def remote_values(env) -> list[bytes]:
    return [r.value() for r in read_records(env.cluster("west").bootstrap, f"east.{TOPIC}", 3)]


def listening_addresses(pids: set[int]) -> list[str]:
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout
    return [line.split()[3] for line in out.splitlines() if any(f"pid={p}," in line for p in pids)]


def process_tree(pid: int) -> set[int]:
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        found.add(p)
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(p)], capture_output=True, text=True).stdout
        todo += [int(x) for x in out.split()]
    return found


def test_cluster_has_two_workers_and_listens_on_loopback_only(repl, spark_env):
    cluster = spark_env.spark
    status = cluster.status()
    assert status["aliveworkers"] == 2 and status["status"] == "ALIVE"
    pids = set().union(*(process_tree(p.pid) for p in [*cluster.processes, *repl.processes]))
    addresses = listening_addresses(pids)
    assert len(addresses) >= 5, addresses  # master RPC + UI, each worker's RPC + UI, the driver
    assert all(a.rsplit(":", 1)[0] in ("127.0.0.1", "[::ffff:127.0.0.1]") for a in addresses), addresses


def test_replicator_is_a_submitted_application_with_two_executors(repl, spark_env):
    apps = spark_env.spark.status()["activeapps"]
    assert [a["name"] for a in apps] == ["mirrordrill-replicator"]
    assert apps[0]["cores"] == 2  # executors x executor_cores
    node = repl.nodes[0]
    assert "spark-submit" in node.process.argv[0] and "--py-files" in node.process.argv
    log = node.log_path.read_text()
    # the driver imported the shipped package, not the checkout
    assert "replicator package loaded from" in log and "replicator.zip/mirrordrill/replicator/__init__.py" in log


def test_spark_scratch_stays_in_the_run_folder(repl, spark_env):
    """Executors and a submitted driver write their scratch where the run's folder is, not in /tmp
    (an executor stopped by a kill left its spark-<uuid> folder there on every drill)."""
    for i in range(2):
        assert list((spark_env.spark.workdir / f"worker-{i}" / "local").glob("spark-*/executor-*")), i
    node = repl.nodes[0]
    assert node.process.pid is not None
    tmp = f"-Djava.io.tmpdir={node.workdir / 'work' / 'spark-tmp'}"
    assert tmp in Path(f"/proc/{node.process.pid}/cmdline").read_bytes().decode().split("\0")
    # each executor's log opens with its command line; Kafka's compression libraries unpack there
    commands = [p.read_text().splitlines()[0] for p in spark_env.spark.workdir.glob("worker-*/work/app-*/*/stderr")]
    assert len(commands) == 2 and all(f'"{tmp}"' in c for c in commands), commands


def test_records_replicate(repl, spark_env):
    values = [f"sps-{i}".encode() for i in range(300)]
    produce(spark_env.cluster("east").bootstrap, TOPIC, values, partition=lambda i: i % 3)
    wait_for(lambda: len(remote_values(spark_env)) >= 300, 180, "300 records on west")
    assert set(remote_values(spark_env)) == set(values)


def test_a_killed_worker_loses_nothing(repl, spark_env):
    cluster = spark_env.spark
    cluster.kill_worker(0)
    values = [f"after-kill-{i}".encode() for i in range(300)]
    produce(spark_env.cluster("east").bootstrap, TOPIC, values, partition=lambda i: i % 3)
    wait_for(lambda: set(values) <= set(remote_values(spark_env)), 240, "records produced after the kill on west")
    status = cluster.status()
    assert status["aliveworkers"] == 1
    assert repl.running


def test_realtime_flow_wider_than_the_free_slots_is_refused(repl, spark_env, artifacts):
    # one worker is left (2 cores) and the running replicator holds them: 3 partitions cannot run
    setup = ReplicationSetup(env=spark_env, flows=[FlowSpec("east", "west", topics=[TOPIC])],
                             workdir=spark_env.workdir / "refused")
    r = PySparkReplicator(setup, artifacts=artifacts, mode="realtime",
                          spark=SparkDeployment("standalone", executors=3, executor_cores=1))
    with pytest.raises(SparkDeploymentError, match=r"needs 3 task slots .* has \d free cores"):
        r.start()
    assert not r.running and not any(p.running for p in r.processes)  # refused before submitting


def test_bad_master_names_the_valid_forms():
    with pytest.raises(SparkDeploymentError, match=r"local \(default\), local\[N\], standalone, spark://"):
        SparkDeployment("spark:/oops")
