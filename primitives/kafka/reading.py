"""Reading a whole (small) topic: internal topics such as checkpoints and heartbeats."""

from __future__ import annotations

import time
import uuid
from typing import Mapping

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

# Answers a partition gives while its leader is moving or, after a restart, while the
# leader's high watermark has not caught up with its followers yet: ask again.
_TRANSIENT = {KafkaError.OFFSET_NOT_AVAILABLE, KafkaError.LEADER_NOT_AVAILABLE,
              KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError._TRANSPORT,
              KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.REQUEST_TIMED_OUT}


def watermarks(consumer: Consumer, topic: str, partitions, timeout_s: float = 30.0) -> dict[int, tuple[int, int]]:
    """(low, high) offsets of each partition, asking again while the broker says it cannot answer yet."""
    deadline = time.monotonic() + timeout_s
    marks: dict[int, tuple[int, int]] = {}
    for p in partitions:
        while True:
            try:
                marks[p] = consumer.get_watermark_offsets(
                    TopicPartition(topic, p), timeout=max(1.0, deadline - time.monotonic()))
                break
            except KafkaException as e:
                error = e.args[0]
                if time.monotonic() >= deadline or not (error.retriable() or error.code() in _TRANSIENT):
                    raise
                time.sleep(0.2)
    return marks


def read_topic(bootstrap: str, topic: str, since_ms: int | None = None, timeout_s: float = 30.0,
               security: Mapping[str, str] | None = None) -> list[Message]:
    """Every record of ``topic`` (from ``since_ms``, or the beginning) up to its current end."""
    consumer = Consumer({"bootstrap.servers": bootstrap, **(security or {}), "group.id": f"__mirrordrill-read-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "log_level": 0})
    try:
        metadata = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
        if metadata is None or metadata.error is not None:
            return []  # not created yet
        partitions = sorted(metadata.partitions)
        marks = watermarks(consumer, topic, partitions, timeout_s)
        ends = {p: high for p, (_, high) in marks.items()}
        # Start at the log start (retention and compaction move it), or at the first record at/after since_ms.
        positions = {p: low for p, (low, _) in marks.items()}
        if since_ms is not None:
            found = consumer.offsets_for_times([TopicPartition(topic, p, since_ms) for p in partitions],
                                               timeout=timeout_s)
            for tp in found:
                # -1: nothing at or after that time in this partition.
                positions[tp.partition] = ends[tp.partition] if tp.offset < 0 else max(tp.offset, positions[tp.partition])
        consumer.assign([TopicPartition(topic, p, positions[p]) for p in partitions])
        out: list[Message] = []
        deadline = time.monotonic() + timeout_s
        while any(positions[p] < ends[p] for p in partitions):
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic} at {bootstrap}: positions {positions}, ends {ends}")
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            positions[msg.partition()] = msg.offset() + 1
            out.append(msg)
        return out
    finally:
        consumer.close()
