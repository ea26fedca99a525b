"""A backlog: records written into a source before the replicator starts.

A capacity drill needs the replicator to have more work than it can do; on a small machine
Locust producers cannot always offer that while brokers and the replicator share the cores.
A backlog written as fast as librdkafka batches allows -- every record in the checker's
envelope and in the ledger of acknowledged sends, like Locust's -- makes the replicator run
flat out from its first batch, and its rate while the backlog lasts is its ceiling.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from mirrordrill.loadgen.envelope import EnvelopeEncoder
from mirrordrill.loadgen.histories.kinds import ACKED_SENDS, history_path
from mirrordrill.loadgen.histories.records import AckedSend
from mirrordrill.loadgen.histories.writer import HistoryWriter


@dataclass(frozen=True)
class BacklogResult:
    records: int
    seconds: float

    @property
    def records_s(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0


def produce_backlog(cluster: str, bootstrap: str, topic: str, records: int, record_size: int, histories: Path,
                    timeout_s: float = 300.0, security: Mapping[str, str] | None = None) -> BacklogResult:
    """Write ``records`` enveloped records of ``record_size`` bytes (keyless: spread over partitions)."""
    encoder = EnvelopeEncoder(f"backlog-{cluster}-{topic}")
    writer = HistoryWriter(ACKED_SENDS, history_path(histories, ACKED_SENDS, encoder.producer_id))
    producer = Producer({"bootstrap.servers": bootstrap, **(security or {}), "acks": "all", "enable.idempotence": True,
                         "linger.ms": 20, "batch.size": 1_000_000, "queue.buffering.max.messages": 200_000,
                         "queue.buffering.max.kbytes": 512 * 1024, "log_level": 0})
    rows: list[AckedSend] = []
    errors: list[str] = []

    def delivered(seq: int, sent_ms: int, size: int, crc: int) -> Callable[[KafkaError | None, Message], None]:
        def report(err: KafkaError | None, msg: Message) -> None:
            partition, offset = msg.partition(), msg.offset()
            if err is not None or partition is None or offset is None:
                errors.append(str(err) if err is not None else f"record {seq}: acked without a partition and offset")
                return
            rows.append(AckedSend(cluster, topic, partition, offset, encoder.producer_id, seq,
                                  sent_ms, int(time.time() * 1000), size, crc))
        return report

    started = time.monotonic()
    try:
        for seq in range(records):
            sent_ms = int(time.time() * 1000)
            value, crc = encoder.encode(seq, sent_ms, record_size)
            while True:
                try:
                    producer.produce(topic, value, on_delivery=delivered(seq, sent_ms, len(value), crc))
                    break
                except BufferError:
                    producer.poll(0.05)
            if seq % 5000 == 0:
                producer.poll(0)
                if rows:
                    writer.write_many(rows)
                    rows.clear()
                if time.monotonic() - started > timeout_s:
                    raise TimeoutError(f"backlog on {cluster}/{topic}: {seq} of {records} records in {timeout_s:.0f}s")
        left = producer.flush(max(1.0, timeout_s - (time.monotonic() - started)))
        took = time.monotonic() - started
        if left or errors:
            raise KafkaException(f"backlog on {cluster}/{topic}: {left} record(s) not acknowledged, "
                                 f"{len(errors)} failed ({errors[:3]})")
        return BacklogResult(records, took)
    finally:
        writer.write_many(rows)  # what was acknowledged is in the ledger, whatever happened
        writer.close()
