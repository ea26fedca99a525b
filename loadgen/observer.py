"""The observer: every record of the target topics, read from the beginning, as TargetRecord rows.

This is where replication latency, losses and duplicates are measured, so it must not miss
a record:
- no consumer group: partitions are assigned by hand, each from its beginning, so a
  rebalance can never move a position and nothing is committed on the target cluster;
- topics (names or a regex) are rediscovered from metadata every ``discovery_interval_s``,
  and every partition first seen (new topic, or partitions added) is read from offset 0
  (the log start); ``drain()`` forces a discovery before it takes end offsets;
- a position read twice (after an offset reset) is written twice: the checker deduplicates
  positions, never ids.
A record without a valid envelope is still written (``producer_id`` "", ``seq`` -1,
``checksum_ok`` false) so that garbage on the target shows up as corruption.

It runs in a native thread of the harness process: confluent-kafka releases the GIL while
it fetches, the harness reads positions and counters directly, and ``drain``/``stop`` are
plain calls that the failover steps make in order.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from mirrordrill.loadgen.envelope import decode_verified
from mirrordrill.loadgen.histories.kinds import TARGET_RECORDS, history_path
from mirrordrill.loadgen.histories.records import TargetRecord
from mirrordrill.loadgen.histories.writer import HistoryWriter
from mirrordrill.loadgen.spec import TopicsArg, TopicSelection

log = logging.getLogger(__name__)

Partition = tuple[str, int]


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class Observer:
    """Reads the selected topics of one cluster from the beginning into a TargetRecord history."""

    def __init__(self, cluster: str, bootstrap: str,
                 topics: TopicsArg, history_dir: str | Path,
                 writer_tag: str | None = None, discovery_interval_s: float = 1.0,
                 batch_size: int = 1000, consumer_config: dict[str, Any] | None = None,
                 security: Mapping[str, str] | None = None) -> None:
        self.cluster = cluster
        self.bootstrap = bootstrap
        self.topics = TopicSelection.of(topics)
        self.discovery_interval_s = discovery_interval_s
        self.batch_size = batch_size
        token = secrets.token_hex(4)
        self.path = history_path(history_dir, TARGET_RECORDS,
                                 writer_tag or f"observer-{cluster}-{token}")
        security = dict(security or {})  # the cluster's librdkafka security settings
        self._conf = {
            "bootstrap.servers": bootstrap,
            **security,
            # Required by the client; never joined (no subscribe) and never committed to.
            "group.id": f"__mirrordrill-observer-{token}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            # An out-of-range position (a wiped cluster) restarts at the log start: reads
            # twice rather than skips.
            "auto.offset.reset": "earliest",
            # The broker answers a fetch as soon as one byte is there (fetch.min.bytes), so the
            # wait bounds only idle fetches: at 10 ms, a hundred a second per broker kept the
            # brokers of a chain busy while the replicator started, and delayed its first record
            # (see docs/measurements/behind-the-code.md#loadgen-observer-py).
            "fetch.wait.max.ms": 500,
            "fetch.min.bytes": 1,
            "isolation.level": "read_committed",
            "enable.partition.eof": False,
            "log_level": 0,  # errors arrive as error events; a down cluster would print a line per retry
            **(consumer_config or {}),
        }
        # log_level 0: while a cluster is down (a drill kills it) librdkafka would print a
        # "Connection refused" line per retry; failures reach us as request errors instead.
        self._admin = AdminClient({"bootstrap.servers": bootstrap, **security, "log_level": 0})
        self._lock = threading.Lock()
        self._positions: dict[Partition, int] = {}   # next offset to read, per partition
        self._assigned: set[Partition] = set()
        self._stop = threading.Event()
        self._discover_now = threading.Event()
        self._discovery_gen = 0
        self._discovered = threading.Condition(self._lock)
        self._want_positions = 0                      # > 0 while a drain waits
        self._thread: threading.Thread | None = None
        self._writer: HistoryWriter[TargetRecord] | None = None
        self.records = 0
        self.undecodable = 0
        self.bad_checksums = 0
        self.started_ts_ms: int | None = None
        self.error: BaseException | None = None

    # --- lifecycle -----------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> Observer:
        """Start reading in a background thread."""
        if self.running:
            raise RuntimeError(f"observer on {self.cluster} is already running")
        self._stop.clear()
        self._writer = writer = HistoryWriter(TARGET_RECORDS, self.path)
        self.started_ts_ms = now_ms()
        self._thread = threading.Thread(target=self._run, args=(writer,), name=f"observer-{self.cluster}",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self, drain: bool = True, timeout_s: float = 60.0) -> bool:
        """Stop reading, after a drain to the current end offsets by default; True if drained."""
        drained = True
        if drain and self.running:
            drained = self.drain(timeout_s)
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=max(5.0, timeout_s))
        if self._writer is not None:
            self._writer.close()
        return drained

    def __enter__(self) -> Observer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop(drain=False)

    # --- state ---------------------------------------------------------------------------
    def positions(self) -> dict[Partition, int]:
        """Next offset to read per assigned partition (what has been read below it)."""
        with self._lock:
            return dict(self._positions)

    @property
    def assigned(self) -> set[Partition]:
        with self._lock:
            return set(self._assigned)

    def end_offsets(self, partitions: Sequence[Partition], timeout_s: float = 15.0,
                    spec: OffsetSpec | None = None) -> dict[Partition, int]:
        """Current end offsets (last stable offsets: what a read_committed reader can reach),
        or the offsets of another ``OffsetSpec`` (e.g. ``OffsetSpec.earliest()``)."""
        if not partitions:
            return {}
        spec = spec or OffsetSpec.latest()
        request = {TopicPartition(t, p): spec for t, p in partitions}
        futures = self._admin.list_offsets(request, isolation_level=IsolationLevel.READ_COMMITTED,
                                           request_timeout=timeout_s)
        return {(tp.topic, tp.partition): fut.result(timeout=timeout_s + 5).offset
                for tp, fut in futures.items()}

    def drain(self, timeout_s: float = 60.0) -> bool:
        """Read everything up to the end offsets as of now (topics discovered first); True if done."""
        if not self.running:
            raise RuntimeError(f"observer on {self.cluster} is not running")
        deadline = time.monotonic() + timeout_s
        with self._lock:
            target_gen = self._discovery_gen + 1
            self._discover_now.set()
            while self._discovery_gen < target_gen and time.monotonic() < deadline:
                if not self.running:
                    break
                self._discovered.wait(timeout=0.2)
            if self._discovery_gen < target_gen:
                return False
            partitions = sorted(self._assigned)
            self._want_positions += 1
        try:
            left = max(1.0, deadline - time.monotonic())
            ends = self.end_offsets(partitions, timeout_s=left)
            # A partition whose records were all deleted (retention, a truncated log) has
            # nothing to read: its start offset already equals its end offset.
            starts = self.end_offsets(partitions, timeout_s=left, spec=OffsetSpec.earliest())
            while time.monotonic() < deadline and self.running:
                pos = self.positions()
                if all(max(pos.get(tp, 0), starts.get(tp, 0)) >= end for tp, end in ends.items()):
                    return True
                time.sleep(0.02)
            return False
        except KafkaException as e:
            log.warning("observer %s: drain could not read end offsets: %s", self.cluster, e)
            return False
        finally:
            with self._lock:
                self._want_positions -= 1

    # --- the thread ----------------------------------------------------------------------
    def _run(self, writer: HistoryWriter[TargetRecord]) -> None:
        consumer = Consumer(self._conf)
        try:
            next_discovery = 0.0
            while not self._stop.is_set():
                if self._discover_now.is_set() or time.monotonic() >= next_discovery:
                    self._discover_now.clear()
                    self._discover(consumer)
                    next_discovery = time.monotonic() + self.discovery_interval_s
                if not self._assigned:
                    self._stop.wait(0.05)
                    continue
                msgs = consumer.consume(self.batch_size, timeout=0.05)
                if msgs:
                    self._record(msgs, writer)
                if self._want_positions:
                    self._refresh_positions(consumer)
        except BaseException as e:  # noqa: BLE001 - kept for the harness, which decides
            self.error = e
            log.exception("observer on %s failed", self.cluster)
        finally:
            consumer.close()
            writer.flush()

    def _discover(self, consumer: Consumer) -> None:
        try:
            metadata = consumer.list_topics(timeout=5.0)
        except KafkaException as e:
            log.warning("observer %s: metadata unavailable: %s", self.cluster, e)
            return
        new: list[TopicPartition] = []
        for name, topic in metadata.topics.items():
            if topic.error is not None or not self.topics.matches(name):
                continue
            for p in topic.partitions:
                if (name, p) not in self._assigned:
                    new.append(TopicPartition(name, p, OFFSET_BEGINNING))
        if new:
            consumer.incremental_assign(new)
            log.info("observer %s: reading %d new partition(s) from the beginning: %s",
                     self.cluster, len(new), sorted({tp.topic for tp in new}))
        with self._lock:
            for tp in new:
                self._assigned.add((tp.topic, tp.partition))
                self._positions.setdefault((tp.topic, tp.partition), 0)
            self._discovery_gen += 1
            self._discovered.notify_all()

    def _record(self, msgs: list[Any], writer: HistoryWriter[TargetRecord]) -> None:
        seen = now_ms()
        cluster = self.cluster
        rows = []
        last: dict[Partition, int] = {}
        for m in msgs:
            if m.error() is not None:
                log.warning("observer %s: %s", cluster, m.error())
                continue
            topic, partition, offset = m.topic(), m.partition(), m.offset()
            env, ok = decode_verified(m.value())
            if env is None:
                self.undecodable += 1
                rows.append(TargetRecord(cluster, topic, partition, offset, "", -1, seen, False, 0))
            else:
                if not ok:
                    self.bad_checksums += 1
                rows.append(TargetRecord(cluster, topic, partition, offset, env.producer_id,
                                         env.seq, seen, ok, env.checksum))
            last[(topic, partition)] = offset + 1
        if rows:
            writer.write_many(rows)
            writer.flush()  # a row is on disk before its position counts as read
            self.records += len(rows)
        with self._lock:
            for tp, nxt in last.items():
                if nxt > self._positions.get(tp, 0):
                    self._positions[tp] = nxt

    def _refresh_positions(self, consumer: Consumer) -> None:
        # The consumer's position also steps over offsets that carry no record for us
        # (transaction markers, aborted records), which message offsets alone never reach.
        with self._lock:
            assigned = [TopicPartition(t, p) for t, p in self._assigned]
        try:
            positions = consumer.position(assigned)
        except KafkaException:
            return
        with self._lock:
            for tp in positions:
                key = (tp.topic, tp.partition)
                if tp.offset >= 0 and tp.offset > self._positions.get(key, 0):
                    self._positions[key] = tp.offset
