"""Reading a whole (small) topic: internal topics such as checkpoints and heartbeats."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, Message, TopicPartition


def read_topic(bootstrap: str, topic: str, since_ms: int | None = None, timeout_s: float = 30.0) -> list[Message]:
    """Every record of ``topic`` (from ``since_ms``, or the beginning) up to its current end."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"__mirrordrill-read-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "log_level": 0})
    try:
        metadata = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
        if metadata is None or metadata.error is not None:
            return []  # not created yet
        partitions = sorted(metadata.partitions)
        marks = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout_s) for p in partitions}
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
