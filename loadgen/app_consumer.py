"""Application consumers: a consumer group member that processes records and commits offsets.

Each processed record becomes a ProcessedRecord row *before* its offset is stored or
committed, so a crash after processing shows up as reprocessing, never as a skip. A
consumer can be stopped and started again on another cluster (failover) from a chosen
start position; every start is a ``ConsumerRun`` with its start time and the time of its
first processed record (RTO).

It runs in a native thread of the harness process rather than in a process of its own: the
failover steps need its committed offsets and its run times directly, start/stop are
ordered calls, and confluent-kafka fetches in librdkafka's threads without the GIL.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    Consumer,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mirrordrill.loadgen.envelope import decode
from mirrordrill.loadgen.histories.kinds import PROCESSED_RECORDS, history_path
from mirrordrill.loadgen.histories.records import ProcessedRecord
from mirrordrill.loadgen.histories.writer import HistoryWriter
from mirrordrill.loadgen.spec import TopicsArg, TopicSelection
from mirrordrill.primitives.kafka.group_offsets import committed_offsets
from mirrordrill.primitives.kafka.reading import watermarks

log = logging.getLogger(__name__)

Partition = tuple[str, int]


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class CommitPolicy(BaseModel):
    """``auto``: Kafka's auto-commit every ``interval_ms`` (of processed records only);
    ``manual``: a synchronous commit every ``interval_ms`` and/or ``every_records``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["auto", "manual"] = "auto"
    interval_ms: int = Field(default=1000, gt=0)
    every_records: int | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _records_only_manual(self) -> CommitPolicy:
        if self.mode == "auto" and self.every_records is not None:
            raise ValueError("every_records needs mode: manual (auto-commit is time-based)")
        return self


class StartPosition(BaseModel):
    """Where a (re)started consumer begins on partitions it has not read in this run.

    ``committed``: the group's committed offsets; ``offsets``: explicit per-partition offsets
    (translated at failover); ``timestamp``: the first offset at or after ``timestamp_ms``;
    ``earliest``/``latest``. ``fallback`` applies where the strategy has no answer (no
    committed offset, a partition missing from ``offsets``, nothing after the timestamp).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    strategy: Literal["committed", "offsets", "timestamp", "earliest", "latest"] = "committed"
    offsets: dict[str, dict[int, int]] = Field(default_factory=dict)
    timestamp_ms: int | None = None
    fallback: Literal["earliest", "latest"] = "earliest"

    @model_validator(mode="after")
    def _complete(self) -> StartPosition:
        if self.strategy == "offsets" and not self.offsets:
            raise ValueError("strategy offsets needs offsets: {topic: {partition: offset}}")
        if self.strategy == "timestamp" and self.timestamp_ms is None:
            raise ValueError("strategy timestamp needs timestamp_ms")
        return self

    @classmethod
    def committed(cls, fallback: Literal["earliest", "latest"] = "earliest") -> StartPosition:
        return cls(strategy="committed", fallback=fallback)

    @classmethod
    def earliest(cls) -> StartPosition:
        return cls(strategy="earliest")

    @classmethod
    def latest(cls) -> StartPosition:
        return cls(strategy="latest")

    @classmethod
    def at_offsets(cls, offsets: Mapping[Partition, int],
                   fallback: Literal["earliest", "latest"] = "earliest") -> StartPosition:
        nested: dict[str, dict[int, int]] = {}
        for (topic, partition), offset in offsets.items():
            nested.setdefault(topic, {})[partition] = offset
        return cls(strategy="offsets", offsets=nested, fallback=fallback)

    @classmethod
    def at_timestamp(cls, timestamp_ms: int,
                     fallback: Literal["earliest", "latest"] = "latest") -> StartPosition:
        return cls(strategy="timestamp", timestamp_ms=timestamp_ms, fallback=fallback)

    def fallback_offset(self) -> int:
        return OFFSET_BEGINNING if self.fallback == "earliest" else OFFSET_END


@dataclass
class ConsumerRun:
    """One start of an application consumer on one cluster."""

    cluster: str
    bootstrap: str
    position: StartPosition
    started_ts_ms: int
    first_record_ts_ms: int | None = None
    stopped_ts_ms: int | None = None
    records: int = 0
    start_offsets: dict[Partition, int] = field(default_factory=dict)  # where reading began
    positioned: set[Partition] = field(default_factory=set)


def fetch_committed_offsets(bootstrap: str, group: str, timeout_s: float = 15.0,
                            security: Mapping[str, str] | None = None) -> dict[Partition, int]:
    """A group's committed offsets on a cluster (works while no member is running)."""
    return committed_offsets({"bootstrap.servers": bootstrap, **(security or {})}, group, timeout_s=timeout_s)


def _subscription(topics: TopicSelection) -> list[str]:
    if topics.pattern is None:
        return list(topics.names)
    # librdkafka subscribes by regex when a name starts with '^' (its own regex dialect).
    return [f"^({topics.pattern.lstrip('^').rstrip('$')})$"]


class AppConsumer:
    """One member of consumer group ``group``, movable between clusters."""

    def __init__(self, group: str, history_dir: str | Path, commit: CommitPolicy = CommitPolicy(),
                 consumer_config: dict[str, Any] | None = None, writer_tag: str | None = None,
                 batch_size: int = 500) -> None:
        self.group = group
        self.commit = commit
        self.batch_size = batch_size
        self._extra_conf = dict(consumer_config or {})
        self.path = history_path(history_dir, PROCESSED_RECORDS,
                                 writer_tag or f"app-{group}-{secrets.token_hex(4)}")
        self._writer: HistoryWriter[ProcessedRecord] | None = None
        self._lock = threading.Lock()
        self._committed: dict[Partition, int] = {}
        self._processed: dict[Partition, int] = {}
        self._stop = threading.Event()
        self._commit_on_stop = True
        self._thread: threading.Thread | None = None
        self._progress = threading.Condition(self._lock)
        self.runs: list[ConsumerRun] = []
        self.records = 0
        self.undecodable = 0
        self.error: BaseException | None = None

    # --- state ---------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def current_run(self) -> ConsumerRun | None:
        return self.runs[-1] if self.runs else None

    def committed_offsets(self) -> dict[Partition, int]:
        """Offsets this member committed successfully on its current (or last) cluster."""
        with self._lock:
            return dict(self._committed)

    def processed_offsets(self) -> dict[Partition, int]:
        """Per partition, the offset after the last record processed in the current run."""
        with self._lock:
            return dict(self._processed)

    def wait_processed(self, records: int, timeout_s: float = 30.0) -> bool:
        """Wait until the current run has processed at least ``records`` records."""
        deadline = time.monotonic() + timeout_s
        with self._progress:
            while self.current_run is None or self.current_run.records < records:
                left = deadline - time.monotonic()
                if left <= 0 or (not self.running and self.current_run is not None):
                    return self.current_run is not None and self.current_run.records >= records
                self._progress.wait(min(left, 0.2))
            return True

    # --- lifecycle -----------------------------------------------------------------------
    def start(self, cluster: str, bootstrap: str,
              topics: TopicsArg,
              position: StartPosition = StartPosition(), security: Mapping[str, str] | None = None) -> ConsumerRun:
        """Join the group on ``cluster`` and process from ``position`` (``security``: the cluster's client settings)."""
        if self.running:
            raise RuntimeError(f"consumer of group {self.group} is already running; stop it first")
        selection = TopicSelection.of(topics)
        if self._writer is None:
            self._writer = HistoryWriter(PROCESSED_RECORDS, self.path)
        writer = self._writer
        run = ConsumerRun(cluster, bootstrap, position, started_ts_ms=now_ms())
        with self._lock:
            self.runs.append(run)
            self._committed = {}
            self._processed = {}
        self._stop.clear()
        self.error = None
        consumer = Consumer(self._config(bootstrap, position) | dict(security or {}))  # bad settings fail the caller
        self._thread = threading.Thread(target=self._run, args=(consumer, run, selection, writer),
                                        name=f"app-{self.group}", daemon=True)
        self._thread.start()
        return run

    def stop(self, commit: bool = True, timeout_s: float = 30.0) -> ConsumerRun | None:
        """Leave the group. ``commit``: commit what was processed first (manual mode; with
        auto-commit, closing commits the stored offsets as Kafka does)."""
        self._commit_on_stop = commit
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout_s)
            if self._thread.is_alive():
                log.warning("consumer of %s did not stop within %.0fs", self.group, timeout_s)
        run = self.current_run
        if run is not None and run.stopped_ts_ms is None:
            run.stopped_ts_ms = now_ms()
        if self._writer is not None:
            self._writer.flush()
        return run

    def restart(self, cluster: str, bootstrap: str,
                topics: TopicsArg,
                position: StartPosition = StartPosition(), commit: bool = True,
                security: Mapping[str, str] | None = None) -> ConsumerRun:
        """Stop here (if running) and start on ``cluster`` from ``position``."""
        self.stop(commit=commit)
        return self.start(cluster, bootstrap, topics, position, security)

    def close(self) -> None:
        """Stop and close the history file."""
        self.stop()
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def __enter__(self) -> AppConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the thread ----------------------------------------------------------------------
    def _config(self, bootstrap: str, position: StartPosition) -> dict[str, Any]:
        auto = self.commit.mode == "auto"
        return {
            "bootstrap.servers": bootstrap,
            "group.id": self.group,
            "enable.auto.commit": auto,
            "auto.commit.interval.ms": self.commit.interval_ms,
            # Offsets are stored only after their rows are written: auto-commit can then
            # never commit a record that was not processed.
            "enable.auto.offset.store": False,
            # Also where a committed offset is out of range (a log truncated at failover).
            "auto.offset.reset": position.fallback,
            "on_commit": self._on_commit,
            # 0: an instance abandoned with a dead cluster retries for the rest of the drill and would
            # print a librdkafka line per retry; errors still arrive as error events (logged below)
            "log_level": 0,
            **self._extra_conf,
        }

    def _on_commit(self, err: KafkaError | None, partitions: list[TopicPartition]) -> None:
        if err is not None:
            log.warning("group %s: commit failed: %s", self.group, err)
        with self._lock:
            for tp in partitions:
                if tp.error is None and tp.offset >= 0:
                    self._committed[(tp.topic, tp.partition)] = tp.offset

    def _position(self, consumer: Consumer, run: ConsumerRun,
                  partitions: list[TopicPartition]) -> None:
        # The start position applies once per partition and run; after a rebalance inside
        # the run, partitions resume from what the group committed, as in a real service.
        fresh = [tp for tp in partitions if (tp.topic, tp.partition) not in run.positioned]
        pos = run.position
        fallback = pos.fallback_offset()
        if pos.strategy == "earliest":
            for tp in fresh:
                tp.offset = OFFSET_BEGINNING
        elif pos.strategy == "latest":
            for tp in fresh:
                tp.offset = OFFSET_END
        elif pos.strategy == "offsets":
            for tp in fresh:
                tp.offset = pos.offsets.get(tp.topic, {}).get(tp.partition, fallback)
        elif pos.strategy == "timestamp" and pos.timestamp_ms is not None and fresh:  # _complete requires the time
            query = [TopicPartition(tp.topic, tp.partition, pos.timestamp_ms) for tp in fresh]
            found = {(r.topic, r.partition): r.offset
                     for r in consumer.offsets_for_times(query, timeout=15.0)}
            for tp in fresh:
                offset = found.get((tp.topic, tp.partition), -1)
                tp.offset = offset if offset >= 0 else fallback
        elif pos.strategy == "committed" and fresh:
            committed = {(c.topic, c.partition): c.offset
                         for c in consumer.committed(fresh, timeout=15.0)}
            for tp in fresh:
                offset = committed.get((tp.topic, tp.partition), -1)
                tp.offset = offset if offset >= 0 else fallback
        for tp in fresh:
            if tp.offset in (OFFSET_BEGINNING, OFFSET_END):
                # Resolved here, not on the first fetch: the run then records where it
                # really began, and "latest" means the end at the moment of assignment.
                low, high = watermarks(consumer, tp.topic, [tp.partition], 15.0)[tp.partition]
                tp.offset = low if tp.offset == OFFSET_BEGINNING else high
            run.positioned.add((tp.topic, tp.partition))
            run.start_offsets[(tp.topic, tp.partition)] = tp.offset
        log.info("group %s on %s: assigned %s", self.group, run.cluster,
                 [(tp.topic, tp.partition, tp.offset) for tp in partitions])

    def _run(self, consumer: Consumer, run: ConsumerRun, topics: TopicSelection,
             writer: HistoryWriter[ProcessedRecord]) -> None:
        manual = self.commit.mode == "manual"
        since_commit = 0
        last_commit = time.monotonic()

        def on_assign(c: Consumer, partitions: list[TopicPartition]) -> None:
            try:
                self._position(c, run, partitions)
            except KafkaException as e:
                log.error("group %s: could not position %s: %s", self.group, partitions, e)
            c.assign(partitions)

        def on_revoke(c: Consumer, partitions: list[TopicPartition]) -> None:
            if manual:
                self._commit_processed(c, [(tp.topic, tp.partition) for tp in partitions])
            with self._lock:
                for tp in partitions:
                    self._processed.pop((tp.topic, tp.partition), None)

        def on_lost(c: Consumer, partitions: list[TopicPartition]) -> None:
            with self._lock:
                for tp in partitions:
                    self._processed.pop((tp.topic, tp.partition), None)

        try:
            consumer.subscribe(_subscription(topics), on_assign=on_assign, on_revoke=on_revoke,
                               on_lost=on_lost)
            while not self._stop.is_set():
                msgs = consumer.consume(self.batch_size, timeout=0.1)
                if msgs:
                    since_commit += self._process(consumer, run, msgs, writer, store=not manual)
                if manual and since_commit and (
                        (self.commit.every_records and since_commit >= self.commit.every_records)
                        or (time.monotonic() - last_commit) * 1000 >= self.commit.interval_ms):
                    self._commit_processed(consumer)
                    since_commit, last_commit = 0, time.monotonic()
            if self._commit_on_stop:
                if manual:
                    self._commit_processed(consumer)
                else:
                    self._commit_stored(consumer)
        except BaseException as e:  # noqa: BLE001 - kept for the harness, which decides
            self.error = e
            log.exception("consumer of group %s on %s failed", self.group, run.cluster)
        finally:
            try:
                consumer.close()
            except KafkaException as e:
                log.warning("group %s: close: %s", self.group, e)
            run.stopped_ts_ms = now_ms()
            with self._progress:
                self._progress.notify_all()

    def _process(self, consumer: Consumer, run: ConsumerRun, msgs: list[Any], writer: HistoryWriter[ProcessedRecord],
                 store: bool) -> int:
        ts = now_ms()
        group, cluster = self.group, run.cluster
        rows = []
        nexts: dict[Partition, int] = {}
        for m in msgs:
            if m.error() is not None:
                log.warning("group %s on %s: %s", group, cluster, m.error())
                continue
            topic, partition, offset = m.topic(), m.partition(), m.offset()
            env = decode(m.value())
            if env is None:
                self.undecodable += 1  # not one of ours: nothing to account for
            else:
                rows.append(ProcessedRecord(group, cluster, topic, partition, offset,
                                            env.producer_id, env.seq, ts))
            nexts[(topic, partition)] = offset + 1
        if rows:
            writer.write_many(rows)
        writer.flush()  # processed rows reach the OS before their offsets are stored
        if store and nexts:
            try:
                consumer.store_offsets(offsets=[TopicPartition(t, p, o)
                                                for (t, p), o in nexts.items()])
            except KafkaException as e:  # a partition revoked meanwhile: reprocessed later
                log.info("group %s: store_offsets: %s", group, e)
        with self._progress:
            self._processed.update(nexts)
            run.records += len(rows)
            self.records += len(rows)
            if rows and run.first_record_ts_ms is None:
                run.first_record_ts_ms = ts
            self._progress.notify_all()
        return len(msgs)

    def _commit_stored(self, consumer: Consumer) -> None:
        # What close() would auto-commit anyway, but synchronously: the result tells us
        # what the group's offsets are when this member leaves.
        try:
            self._on_commit(None, consumer.commit(asynchronous=False) or [])
        except KafkaException as e:  # _NO_OFFSET: nothing stored since the last commit
            log.debug("group %s: final commit: %s", self.group, e)

    def _commit_processed(self, consumer: Consumer, only: list[Partition] | None = None) -> None:
        with self._lock:
            offsets = [TopicPartition(t, p, o) for (t, p), o in self._processed.items()
                       if only is None or (t, p) in only]
        if not offsets:
            return
        try:
            result = consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as e:
            log.warning("group %s: commit failed: %s", self.group, e)
            return
        self._on_commit(None, result or [])
