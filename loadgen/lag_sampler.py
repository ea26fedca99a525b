"""The lag sampler: the end offset of every partition of some topics, once a second.

One ``ListOffsets`` request per sample covers every partition (an AdminClient batch), so a
sample is one point in time per cluster. When the cluster does not answer (a fault), the
sample is skipped and the gap in the history shows the outage. Runs in a native thread of
the harness process; it only waits on the network.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from mirrordrill.loadgen.histories.kinds import END_OFFSETS, history_path
from mirrordrill.loadgen.histories.records import LagSample
from mirrordrill.loadgen.histories.writer import HistoryWriter
from mirrordrill.loadgen.spec import TopicsArg, TopicSelection

log = logging.getLogger(__name__)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class LagSampler:
    """Writes a LagSample per partition of the selected topics on one cluster every interval."""

    def __init__(self, cluster: str, bootstrap: str,
                 topics: TopicsArg, history_dir: str | Path,
                 interval_s: float = 1.0, writer_tag: str | None = None,
                 request_timeout_s: float | None = None, security: Mapping[str, str] | None = None) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s}")
        self.cluster = cluster
        self.topics = TopicSelection.of(topics)
        self.interval_s = interval_s
        self.request_timeout_s = request_timeout_s or max(0.5, min(5.0, interval_s * 0.8))
        self.path = history_path(history_dir, END_OFFSETS,
                                 writer_tag or f"lag-{cluster}-{secrets.token_hex(4)}")
        # log_level 0: while a cluster is down (a drill kills it) librdkafka would print a
        # "Connection refused" line per retry; failures reach us as request errors instead.
        self._admin = AdminClient({"bootstrap.servers": bootstrap, **(security or {}), "log_level": 0})
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._writer: HistoryWriter[LagSample] | None = None
        self.samples = 0
        self.failed_samples = 0   # no answer at all: no rows for that tick
        self.partial_samples = 0  # some partitions without an answer
        self.last_error: str | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def sample_once(self) -> list[LagSample]:
        """End offsets of the selected partitions now; partitions that fail are left out
        (raises KafkaException when the cluster does not answer at all)."""
        t = self.request_timeout_s
        metadata = self._admin.list_topics(timeout=t)
        partitions = [TopicPartition(name, p)
                      for name, topic in metadata.topics.items()
                      if topic.error is None and self.topics.matches(name)
                      for p in topic.partitions]
        if not partitions:
            return []
        futures = self._admin.list_offsets({tp: OffsetSpec.latest() for tp in partitions},
                                           isolation_level=IsolationLevel.READ_UNCOMMITTED,
                                           request_timeout=t)
        rows, errors = [], []
        ts = now_ms()
        for tp, fut in sorted(futures.items(), key=lambda kv: (kv[0].topic, kv[0].partition)):
            try:
                rows.append(LagSample(ts, self.cluster, tp.topic, tp.partition,
                                      fut.result(timeout=t + 1).offset))
            except KafkaException as e:
                # One partition without a leader (being created, or moving) must not cost
                # the others their sample.
                errors.append(f"{tp.topic}[{tp.partition}]: {e}")
        if errors:
            self.partial_samples += 1
            self.last_error = errors[0]
            if self.partial_samples in (1, 10) or self.partial_samples % 60 == 0:
                log.warning("lag sampler %s: %d partition(s) not sampled: %s", self.cluster,
                            len(errors), errors[0])
        return rows

    def start(self) -> LagSampler:
        """Sample in a background thread until ``stop()``."""
        if self.running:
            raise RuntimeError(f"lag sampler on {self.cluster} is already running")
        self._stop.clear()
        self._writer = writer = HistoryWriter(END_OFFSETS, self.path)
        self._thread = threading.Thread(target=self._run, args=(writer,), name=f"lag-{self.cluster}", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop sampling and close the history."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout_s)
        if self._writer is not None:
            self._writer.close()

    def __enter__(self) -> LagSampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self, writer: HistoryWriter[LagSample]) -> None:
        start = time.monotonic()
        tick = 0
        while not self._stop.is_set():
            try:
                rows = self.sample_once()
                writer.write_many(rows)
                writer.flush()
                self.samples += 1
            except Exception as e:  # noqa: BLE001 - KafkaException, timeouts, ...
                # A cluster that does not answer is what faults look like: skip this sample.
                self.failed_samples += 1
                self.last_error = str(e)
                if self.failed_samples in (1, 10) or self.failed_samples % 60 == 0:
                    log.warning("lag sampler %s: sample failed (%d so far): %s", self.cluster,
                                self.failed_samples, e)
            # A fixed schedule; ticks missed while a request hung are skipped, not bunched.
            tick = max(tick + 1, int((time.monotonic() - start) / self.interval_s) + 1)
            self._stop.wait(max(0.0, start + tick * self.interval_s - time.monotonic()))
