"""Small real-Kafka client helpers shared by integration tests."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import NewTopic


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
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"test-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False, "log_level": 0})
    try:
        ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout_s)[1] for p in range(partitions)}
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        pos = {p: 0 for p in range(partitions)}
        out: list[bytes] = []
        deadline = time.monotonic() + timeout_s
        while any(pos[p] < ends[p] for p in pos) and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            pos[m.partition()] = m.offset() + 1
            out.append(m.value())
        return out
    finally:
        c.close()
