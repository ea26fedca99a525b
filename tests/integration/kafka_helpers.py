"""Small real-Kafka client helpers shared by integration tests."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import NewTopic

from mirrordrill.loadgen import envelope
from mirrordrill.primitives.kafka.reading import watermarks


def unique_topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def new_topic(name: str, partitions: int = 1, rf: int = 1) -> NewTopic:
    return NewTopic(name, partitions, rf)


def produce_values(bootstrap: str, topic: str, values: list[bytes], timeout_s: float = 30.0, **conf) -> list:
    """Produce with acks=all + idempotence; returns the delivery errors (None = acknowledged)."""
    results: list = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                  "message.timeout.ms": int(timeout_s * 1000), "log_level": 0, **conf})
    for v in values:
        p.produce(topic, v, on_delivery=lambda err, msg: results.append(err))
    p.flush(timeout_s + 5)
    return results


def read_values(bootstrap: str, topic: str, partitions: int = 1, timeout_s: float = 30.0) -> list[bytes]:
    """Every value in ``topic`` from the beginning up to the current end offsets."""
    return [m.value() for m in read_records(bootstrap, topic, partitions, timeout_s)]


def wait_for(check, timeout_s: float, what: str, interval_s: float = 1.0):
    """Poll ``check`` until it returns something truthy; fail with ``what`` and the last value."""
    import pytest
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval_s)
    pytest.fail(f"timed out after {timeout_s:.0f}s waiting for {what}; last value: {last!r}")


def topic_configs(cluster, topic: str) -> dict[str, str]:
    """Every config value of ``topic`` on ``cluster``."""
    from confluent_kafka.admin import ConfigResource, ResourceType
    resource = ConfigResource(ResourceType.TOPIC, topic)
    admin = cluster.admin()  # must outlive the future
    entries = admin.describe_configs([resource])[resource].result(timeout=15)
    return {name: entry.value for name, entry in entries.items()}


def partition_count(cluster, topic: str) -> int:
    """Partitions of ``topic`` on ``cluster`` (0 while it does not exist)."""
    meta = cluster.admin().list_topics(topic, timeout=10).topics.get(topic)
    return 0 if meta is None or meta.error is not None else len(meta.partitions)


def topic_names(cluster) -> set[str]:
    return set(cluster.admin().list_topics(timeout=10).topics)


def values_in(cluster, topic: str, timeout_s: float = 10.0) -> list[bytes]:
    """Every value in ``topic`` on ``cluster`` (all partitions); [] while the topic does not exist."""
    partitions = partition_count(cluster, topic)
    return read_values(cluster.bootstrap, topic, partitions, timeout_s=timeout_s) if partitions else []


def read_records(bootstrap: str, topic: str, partitions: int, timeout_s: float = 30.0) -> list:
    """Every record (confluent Message) of ``topic`` up to the current end offsets, in partition order.

    Read committed; a partition's end event ends it too, since in a transactional topic the last
    offsets can be commit markers, which are never returned."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"test-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False, "enable.partition.eof": True, "log_level": 0})
    try:
        ends = {p: high for p, (_, high) in watermarks(c, topic, range(partitions), timeout_s).items()}
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        pos = {p: 0 for p in range(partitions)}
        out = []
        deadline = time.monotonic() + timeout_s
        while any(pos[p] < ends[p] for p in pos) and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    pos[m.partition()] = max(pos[m.partition()], ends[m.partition()])
                continue
            pos[m.partition()] = m.offset() + 1
            out.append(m)
        return sorted(out, key=lambda m: (m.partition(), m.offset()))
    finally:
        c.close()


def consume_and_commit(bootstrap: str, topic: str, group: str, partition: int, upto: int) -> None:
    """Consume one partition of ``topic`` as ``group`` and commit exactly offset ``upto`` for it."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "log_level": 0})
    try:
        consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        deadline = time.monotonic() + 60
        position = -1
        while position + 1 < upto and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                position = msg.offset()
        assert position + 1 >= upto, f"consumed only up to {position}"
        consumer.commit(offsets=[TopicPartition(topic, partition, upto)], asynchronous=False)
    finally:
        consumer.close()


def produce_enveloped(bootstrap: str, topic: str, producer_id: str, count: int,
                      first_seq: int = 0, size: int = 256, partitions: int = 1
                      ) -> list[tuple[int, int, int]]:
    """Produce ``count`` enveloped records round robin over partitions; (seq, partition, offset)."""
    enc = envelope.EnvelopeEncoder(producer_id)
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                  "log_level": 3})
    acked: list[tuple[int, int, int]] = []
    for seq in range(first_seq, first_seq + count):
        value, _ = enc.encode(seq, time.time_ns() // 1_000_000, size)
        p.produce(topic, value, partition=seq % partitions,
                  on_delivery=lambda err, msg, s=seq: acked.append((s, msg.partition(),
                                                                    msg.offset()))
                  if err is None else None)
    assert p.flush(30) == 0
    assert len(acked) == count
    return acked
