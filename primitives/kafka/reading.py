"""Reading a whole (small) topic: internal topics such as checkpoints and heartbeats."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

# Answers a partition gives while its leader is moving or, after a restart, while the
# leader's high watermark has not caught up with its followers yet: ask again.
_TRANSIENT = {KafkaError.OFFSET_NOT_AVAILABLE, KafkaError.LEADER_NOT_AVAILABLE,
              KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError._TRANSPORT,
              KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.REQUEST_TIMED_OUT}


def watermarks(consumer: Consumer, topic: str, partitions: Iterable[int], timeout_s: float = 30.0) -> dict[int, tuple[int, int]]:
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
               security: Mapping[str, str] | None = None, isolation: str = "read_committed") -> list[Message]:
    """Every record of ``topic`` (from ``since_ms``, or the beginning) up to its current end, as a
    consumer at ``isolation`` reads it (``read_uncommitted`` also returns aborted records)."""
    # Partition EOF ends a partition too: in a transactional topic (MM2's exactly-once mode writes
    # its checkpoints and heartbeats so) the last offsets can be commit markers, never returned.
    consumer = Consumer({"bootstrap.servers": bootstrap, **(security or {}),
                         "group.id": f"__mirrordrill-read-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "enable.partition.eof": True, "isolation.level": isolation,
                         "log_level": 0})
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
        pending = {p for p in partitions if positions[p] < ends[p]}
        deadline = time.monotonic() + timeout_s
        while pending:
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic} at {bootstrap}: positions {positions}, ends {ends}")
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            partition, offset, err = msg.partition(), msg.offset(), msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    pending.discard(partition)
                continue
            if partition is None or offset is None:
                continue  # the client sets both on every record it returns
            positions[partition] = offset + 1
            if positions[partition] >= ends[partition]:
                pending.discard(partition)
            out.append(msg)
        return out
    finally:
        consumer.close()


def ends_after_last_record(bootstrap: str, partitions: list[tuple[str, int]], window: int = 200,
                           timeout_s: float = 15.0, security: Mapping[str, str] | None = None
                           ) -> dict[tuple[str, int], int]:
    """One past the newest committed record of each partition, read from its last ``window`` offsets.

    That is its log end unless transactions wrote there: a commit marker takes an offset no record
    holds, and an aborted record is not read. A partition whose window holds no record is left out."""
    if not partitions:
        return {}
    consumer = Consumer({"bootstrap.servers": bootstrap, **(security or {}),
                         "group.id": f"__mirrordrill-read-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True, "log_level": 0})
    try:
        starts: dict[tuple[str, int], int] = {}
        for topic in sorted({t for t, _ in partitions}):
            numbers = [p for t, p in partitions if t == topic]
            for p, (low, high) in watermarks(consumer, topic, numbers, timeout_s).items():
                if high > low:
                    starts[(topic, p)] = max(low, high - window)
        consumer.assign([TopicPartition(t, p, start) for (t, p), start in starts.items()])
        newest: dict[tuple[str, int], int] = {}
        pending = set(starts)
        deadline = time.monotonic() + timeout_s
        while pending and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            record_topic, partition, offset, err = msg.topic(), msg.partition(), msg.offset(), msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    pending.discard((record_topic, partition))  # read to the end: markers and aborted records after it skipped
                continue
            if record_topic is None or partition is None or offset is None:
                continue  # the client sets all three on every record it returns
            newest[(record_topic, partition)] = offset + 1
        return newest
    finally:
        consumer.close()
