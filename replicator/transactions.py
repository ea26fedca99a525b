"""A transactional flow's writers: their transactional ids, the fence that precedes every start, the sink.

With ``transactional`` on, a flow writes each target partition through a producer whose
transactional id is that partition's own (``transactional_id``), the same in every driver and
every restart. So a driver that is about to start a query can *fence* the ids first (``fence``):
the broker aborts whatever an older writer left open and refuses everything it still sends,
because only a transactional id's epoch fences a producer on the broker (an idempotent
producer, as Spark's Kafka sink uses, gets a new producer id per instance and fences nothing).
Only then does the driver read the newest *committed* copy in each partition (read_committed,
``resume``), so nothing an older driver had buffered, even one paused and resumed later, can
land after that read: the guarantee holds at the target, not on anyone's timer.

The fence uses librdkafka (``init_transactions`` per id, which is what Kafka's
``Admin.fenceProducers`` sends too): confluent-kafka-python has no ``fenceProducers``, and the
first query's start positions are read before the driver's JVM exists (``FlowRuntime.prepare_start``).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from confluent_kafka import Producer

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import DataStreamWriter

WRITER_CLASS = "io.mirrordrill.replicator.TransactionalRowWriter"

# Fences run in parallel, a producer (and its connections) each: a bounded pool, as a flow
# may have hundreds of partitions.
FENCE_THREADS = 8


def id_prefix(user_prefix: str, source: str, target: str) -> str:
    """What every transactional id of flow ``source->target`` starts with.

    ``user_prefix`` comes first: on a cluster a drill does not own, transactional ids must
    start with the drill's prefix (the proxy's guard refuses others)."""
    return f"{user_prefix}mirrordrill.{source}-{target}."


def transactional_id(prefix: str, remote_topic: str, partition: int) -> str:
    """The transactional id of one target partition (the Java writer builds the same string)."""
    return f"{prefix}{remote_topic}.{partition}"


def fence(conn: dict[str, Any], ids: Iterable[str], timeout_s: float = 60.0) -> None:
    """Fence every writer of ``ids``: aborts their open transactions and refuses their later sends.

    When this returns, the aborts are written (the broker answers a transaction's new epoch only
    once the old one has ended), so a read_committed read after it sees every committed copy and
    waits on none of these ids. Raises when any id could not be fenced: the start must not go on."""
    ids = sorted(set(ids))
    if not ids:
        return
    with ThreadPoolExecutor(min(FENCE_THREADS, len(ids)), thread_name_prefix="fence") as pool:
        for _ in pool.map(lambda i: _fence_one(conn, i, timeout_s), ids):
            pass


def _fence_one(conn: dict[str, Any], transactional_id_: str, timeout_s: float) -> None:
    # short retry backoffs: while the coordinator aborts the fenced writer's open transaction it answers
    # CONCURRENT_TRANSACTIONS, and librdkafka's default backoff (100 ms, doubling to 1 s) waits past the abort
    producer = Producer(dict(conn) | {"transactional.id": transactional_id_, "log_level": 0,
                                      "retry.backoff.ms": 20, "retry.backoff.max.ms": 100})
    # the new epoch is this producer's; it sends nothing, and the next writer's
    # initTransactions bumps the epoch again
    producer.init_transactions(timeout_s)
    producer.flush(0)


# the Java Admin's settings a fence needs from the sink producer's: where the target is and how to reach it
_ADMIN_KEYS = ("bootstrap.servers", "security.", "sasl.", "ssl.", "client.dns.lookup")


class JvmFence:
    """``fence`` through the driver JVM's Kafka Admin (``Admin.fenceProducers``, KIP-618), with the sink
    producer's connection settings; the Admin is made (classes loaded, connected) once, ahead of the
    first fence, on a thread of its own.

    Why, once a driver's JVM runs: while the coordinator aborts a fenced writer's open transaction
    it answers CONCURRENT_TRANSACTIONS, and librdkafka asks again only after a fixed 500 ms (its
    PID timer), so a takeover's fence took about a second; the Java client asks again after
    ``retry.backoff.ms``."""

    def __init__(self, spark: SparkSession, producer_config: dict[str, str]) -> None:
        self._jvm = spark.sparkContext._jvm
        self._config = {k: v for k, v in producer_config.items() if k.startswith(_ADMIN_KEYS)}
        self._config |= {"retry.backoff.ms": "20", "retry.backoff.max.ms": "100"}
        self._admin: Any = None
        self._made = threading.Lock()
        threading.Thread(target=self._admin_client, name="fence-admin", daemon=True).start()

    def _admin_client(self) -> Any:
        with self._made:
            if self._admin is None:
                if self._jvm is None:
                    raise RuntimeError("the Spark session's JVM gateway is closed")
                props = self._jvm.java.util.Properties()
                for key, value in self._config.items():
                    props.setProperty(key, value)
                admin = self._jvm.org.apache.kafka.clients.admin.Admin.create(props)
                admin.describeCluster().clusterId().get()  # connected: the first fence's round trips only
                self._admin = admin
            return self._admin

    def __call__(self, ids: Iterable[str], timeout_s: float = 60.0) -> None:
        ids = sorted(set(ids))
        if not ids:
            return
        admin, jvm = self._admin_client(), self._jvm
        assert jvm is not None  # the client raised if it was
        names = jvm.java.util.ArrayList()
        for i in ids:
            names.add(i)
        admin.fenceProducers(names).all().get(int(timeout_s * 1000), jvm.java.util.concurrent.TimeUnit.MILLISECONDS)


def new_generation() -> str:
    """A query start's token: the executors' producers of an older start are closed, not reused."""
    return uuid.uuid4().hex


def transactional_sink(writer: DataStreamWriter, spark: SparkSession, producer_config: dict[str, str],
                       prefix: str, commit_interval_ms: int, generation: str) -> DataStreamWriter:
    """``writer`` writing through ``TransactionalRowWriter`` (replicator/jvm), a JVM ForeachWriter.

    Attached on the JVM side, as pyspark's own ``foreach`` attaches its Python writer: a row
    never leaves the JVM (a Python ForeachWriter would pickle every record to a Python worker)."""
    jvm = spark.sparkContext._jvm
    if jvm is None:
        raise RuntimeError("the Spark session's JVM gateway is closed")
    config = jvm.java.util.HashMap()
    for key, value in producer_config.items():
        config.put(key, value)
    jwriter = getattr(jvm, WRITER_CLASS)(config, prefix, generation, commit_interval_ms)
    writer._jwrite.foreach(jwriter)
    return writer
