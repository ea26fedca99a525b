"""What a flow's control plane reads outside Spark: where its next query starts, and its lag.

Both read the target (the newest record this flow copied into each partition, ``resume``) and the
source (whether that record is still there, start and end offsets), each with clients of its own:
the resume reads run on the flow's control plane, the lag on the process's lag thread, and a Kafka
consumer must not be assigned and read from two threads at once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from mirrordrill.replicator.filters import TopicSelector
from mirrordrill.replicator.history import HistoryEnds
from mirrordrill.replicator.planted_faults import DataPathFault
from mirrordrill.replicator.resume import (
    Copy,
    FlowOrigin,
    StartPositions,
    copied_up_to,
    copies_held,
    newest_copies,
    records_waiting,
    settled,
    start_offsets,
    starting_offsets,
    target_consumer,
)
from mirrordrill.replicator.transactions import JvmFence, fence, transactional_id

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("replicator")

Partition = tuple[str, int]


def source_consumer(source_conn: dict[str, str]) -> Consumer:
    """A consumer of the source that only reads offsets and single records (it never joins its group)."""
    return Consumer(dict(source_conn) | {"group.id": "__mirrordrill-lag", "enable.auto.commit": False, "log_level": 0})


class SourceReads:
    """The source's offsets, read by the control plane (a consumer made on first use)."""

    def __init__(self, admin: AdminClient, source_conn: dict[str, str]) -> None:
        self.admin = admin
        self._conn = source_conn
        self._consumer: Consumer | None = None

    def consumer(self) -> Consumer:
        if self._consumer is None:
            self._consumer = source_consumer(self._conn)
        return self._consumer

    def ends(self, topic: str, partitions: int) -> list[int]:
        source = self.consumer()
        return [source.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions)]

    def bounds(self, partitions: list[Partition]) -> tuple[dict[Partition, int], dict[Partition, int]]:
        """The source's start and end offsets of ``partitions``, both requests in flight at once: one round
        trip over the WAN, not two."""
        if not partitions:
            return {}, {}
        requests = [self.admin.list_offsets({TopicPartition(t, p): spec for t, p in partitions}, request_timeout=10)
                    for spec in (OffsetSpec.earliest(), OffsetSpec.latest())]
        lows, highs = ({(tp.topic, tp.partition): f.result().offset for tp, f in futures.items()} for futures in requests)
        return lows, highs

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()


class StartReads:
    """Where a flow's next query starts: right after its newest copy in each target partition."""

    def __init__(self, name: str, selector: TopicSelector, origin: FlowOrigin, target_conn: dict[str, str],
                 source: SourceReads, positions: StartPositions, history: HistoryEnds | None,
                 data_fault: DataPathFault | None, transactional_ids: str | None = None) -> None:
        self.name, self.selector, self.origin, self.source = name, selector, origin, source
        self.positions, self.history, self.data_fault = positions, history, data_fault
        # a transactional flow's id prefix: its writers are fenced before every read (``transactions``)
        self.transactional_ids = transactional_ids
        self._target_conn = target_conn
        self._consumer: Consumer | None = None
        # once the driver's JVM runs, the flow fences through it (``transactions.JvmFence``); before, librdkafka
        self.fence_with: Callable[[list[str]], None] | None = None

    def fence_through_jvm(self, spark: SparkSession, producer_config: dict[str, str]) -> None:
        """From now on a transactional flow fences through the driver's JVM (``transactions.JvmFence``)."""
        if self.transactional_ids is not None and self.fence_with is None:
            self.fence_with = JvmFence(spark, producer_config)

    def next_start(self, topics: tuple[str, ...], partitions: dict[str, int], settle: bool) -> tuple[str, int]:
        """Spark's startingOffsets for the next query, and how many records it reads first on a restart (0 on a
        first start). ``settle``: a query ended in this process, so wait for its writes to settle first.

        A transactional flow fences its writers instead of waiting: once fenced, no older writer
        can commit anything, so one read is final (``transactions``)."""
        c = self._consumer = self._consumer or target_consumer(dict(self._target_conn))
        remote = {t: self.selector.remote_topic(t) for t in topics}
        parts = {t: partitions.get(t, 1) for t in topics}

        def read() -> dict[Partition, Copy | None]:
            for t in parts:  # the consumer's metadata must know partitions added since it last looked
                c.list_topics(remote[t], timeout=10)
            wheres = [(t, p) for t, n in parts.items() for p in range(n)]
            copies = newest_copies(c, [(remote[t], p) for t, p in wheres], self.origin)
            return {(t, p): copies[(remote[t], p)] for t, p in wheres}
        if self.transactional_ids is not None:
            began = time.monotonic()
            ids = [transactional_id(self.transactional_ids, remote[t], p) for t, n in parts.items() for p in range(n)]
            if self.fence_with is not None:
                self.fence_with(ids)
            else:
                fence(self._target_conn, ids)
            fenced = time.monotonic()
            copies = read()
            log.info("flow %s: fenced %d transactional writers in %.2fs, then read the newest copies in %.2fs",
                     self.name, len(ids), fenced - began, time.monotonic() - fenced)
        else:
            copies = settled(read) if settle else read()
        began = time.monotonic()
        # one look at the source's offsets serves the check and the count of the records waiting (nothing
        # copied yet: neither is needed, and the source is not asked)
        lows, highs = self.source.bounds(list(copies)) if any(c is not None for c in copies.values()) else ({}, {})
        copied = self._resumable(copies, lows, highs)
        log.info("flow %s: checked on the source the records it copied last in %.2fs", self.name, time.monotonic() - began)
        if self.history is not None:  # restore_history
            self.history.pin({t: n for t, n in parts.items() if self.selector.restored_topic(t) is not None},
                             self.source.ends)
        positions = self.positions.resolve(parts, self.source.ends)
        # a restart (something of this flow is on the target) counts every record its query will
        # read first, in partitions with nothing copied too: a kill mid-batch in micro-batch mode
        # can leave one partition copied and the others not started
        resumed = any(offset is not None for offset in copied.values())
        starts = start_offsets(positions, copied)
        return starting_offsets(starts), records_waiting(starts, lows, highs) if resumed else 0

    def _resumable(self, copies: dict[Partition, Copy | None], lows: dict[Partition, int],
                   highs: dict[Partition, int]) -> dict[Partition, int | None]:
        """Each copy's source offset, when the source still holds that very record (``lows``/``highs``: the
        source's offsets); else None (start over)."""
        found = {where: copy for where, copy in copies.items() if copy is not None}
        if not found:  # nothing copied yet: no round trip to the source
            return dict.fromkeys(copies)
        held = copies_held(self.source.consumer(), found, lows, highs)
        out: dict[Partition, int | None] = {}
        for where, copy in copies.items():
            out[where] = None
            if copy is None:
                continue
            if held[where]:
                out[where] = self.data_fault.resume_from(copy.source_offset) if self.data_fault else copy.source_offset
                continue
            log.warning("flow %s: %s[%d] on the source no longer holds the record copied from offset %d (its log was "
                        "recreated, e.g. wiped and rebuilt): copying the partition from its start position",
                        self.name, where[0], where[1], copy.source_offset)
        return out

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()


class FlowLag:
    """Per remote partition: source end offset minus (source offset of the last record on the target + 1).

    Read from the process's lag thread only, with clients of its own (made on first use)."""

    def __init__(self, selector: TopicSelector, origin: FlowOrigin, history: HistoryEnds,
                 source_conn: dict[str, str], target_conn: dict[str, str]) -> None:
        self.selector, self.origin, self.history = selector, origin, history
        self._conns = (target_conn, source_conn)
        self._clients: tuple[Consumer, Consumer] | None = None

    def measure(self, partitions: dict[str, int]) -> dict[Partition, int]:
        if self._clients is None:
            self._clients = (target_consumer(dict(self._conns[0])), source_consumer(self._conns[1]))
        target, source = self._clients
        out = {}
        for topic, n in partitions.items():
            remote = self.selector.remote_topic(topic)
            restored = self.selector.restored_topic(topic) is not None
            for p in range(n):
                _, src_high = source.get_watermark_offsets(TopicPartition(topic, p), timeout=5)
                if restored and (end := self.history.end(topic, p)) is not None:
                    src_high = min(src_high, end)  # past the history nothing is copied: no lag either
                # the newest record of *this* flow (under identity others write the partition too)
                copied = copied_up_to(target, remote, p, self.origin, window=1024, timeout_s=5)
                out[(remote, p)] = max(0, src_high - (copied + 1 if copied is not None else 0))
        return out

    def close(self) -> None:
        for c in self._clients or ():
            c.close()
