"""Exact offset translation from the target's own records.

Every record the replicator writes carries its source offset (``SOURCE_OFFSET_HEADER``), and
source partition p always lands in target partition p. For a consumer group whose committed
source offset is C (it has processed everything below C), the translated target offset is the
first target position holding a record with source offset >= C. Every record >= C has a copy
at or after that position, so a consumer starting there skips nothing; and in the normal case
(no replays) it reprocesses nothing either, where MM2's sparse offset syncs make it rewind.

The index keeps, per target partition, only the *prefix maxima* (positions whose source
offset exceeds every earlier one): the first position with source offset >= C is always one
of them. In steady replication they form one run of consecutive offsets, so memory stays tiny.
"""

from __future__ import annotations

import bisect
import time
from dataclasses import dataclass, field

from confluent_kafka import Consumer, TopicPartition

from mirrordrill.replicator.headers import source_offset_of


@dataclass
class Run:
    """Positions pos..pos+length-1 hold source offsets src..src+length-1, each a new maximum."""

    src: int
    pos: int
    length: int = 1

    @property
    def src_end(self) -> int:
        return self.src + self.length - 1


@dataclass
class PartitionIndex:
    """The prefix maxima of one target partition, up to ``scanned_to`` (exclusive)."""

    topic: str
    partition: int
    scanned_to: int = 0
    max_src: int = -1
    runs: list[Run] = field(default_factory=list)
    _ends: list[int] = field(default_factory=list, repr=False)  # src_end of each run, for bisect

    def observe(self, position: int, source_offset: int | None) -> None:
        """Feed the record at ``position`` (positions must arrive in increasing order)."""
        if position < self.scanned_to:
            return  # read twice (a rescan); already counted
        self.scanned_to = position + 1
        if source_offset is None or source_offset <= self.max_src:
            return
        self.max_src = source_offset
        last = self.runs[-1] if self.runs else None
        if last and source_offset == last.src_end + 1 and position == last.pos + last.length:
            last.length += 1
            self._ends[-1] = last.src_end
        else:
            self.runs.append(Run(source_offset, position))
            self._ends.append(source_offset)

    def skip_to(self, position: int) -> None:
        """Positions below ``position`` no longer exist (retention); nothing to learn from them."""
        self.scanned_to = max(self.scanned_to, position)

    def translate(self, committed: int) -> int:
        """First scanned position whose source offset is >= ``committed``; ``scanned_to`` if none yet."""
        i = bisect.bisect_left(self._ends, committed)
        if i == len(self.runs):
            return self.scanned_to
        run = self.runs[i]
        return run.pos + max(0, committed - run.src)

    @property
    def replicated_up_to(self) -> int:
        """Source offset one past the highest one seen on the target (the replicated position)."""
        return self.max_src + 1


# How long one consume() call of a refresh waits for more records. The loop ends as soon as
# every listed partition is read to the end it had when the refresh began, so a short wait
# costs a few more calls, never records.
REFRESH_POLL_S = 0.05


class OffsetIndex:
    """Indexes of target partitions, brought up to date by reading the target on demand."""

    def __init__(self, target_conf: dict[str, str]):
        self._conf = {**target_conf, "group.id": "__mirrordrill-offset-index", "enable.auto.commit": False,
                      "enable.partition.eof": False, "fetch.wait.max.ms": 50, "log_level": 0,
                      "queued.max.messages.kbytes": 65536}
        self._parts: dict[tuple[str, int], PartitionIndex] = {}
        self._consumer: Consumer | None = None

    def partition(self, topic: str, partition: int) -> PartitionIndex:
        key = (topic, partition)
        if key not in self._parts:
            self._parts[key] = PartitionIndex(topic, partition)
        return self._parts[key]

    def refresh(self, partitions: list[tuple[str, int]], timeout_s: float = 60.0,
                start_at: dict[tuple[str, int], int] | None = None) -> None:
        """Read each listed target partition from where the index stopped to its current end.

        ``start_at``: a position per partition below which every record is known to hold a
        source offset below the commits that will be translated (a checkpoint's downstream
        offset); reading starts there instead of at the log start.
        """
        if self._consumer is None:
            self._consumer = Consumer(self._conf)
        c = self._consumer
        todo: dict[tuple[str, int], int] = {}
        for topic, p in partitions:
            idx = self.partition(topic, p)
            low, high = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            idx.skip_to(max(low, min((start_at or {}).get((topic, p), low), high)))
            if idx.scanned_to < high:
                todo[(topic, p)] = high
        if not todo:
            return
        c.assign([TopicPartition(t, p, self.partition(t, p).scanned_to) for t, p in todo])
        deadline = time.monotonic() + timeout_s
        try:
            while todo and time.monotonic() < deadline:
                # consume() returns when it holds num_messages or its timeout ran out, not when the
                # partitions are read: with a 0.5 s timeout every checkpoint pass and failover
                # translation waited half a second for records that had all arrived (a checkpoint's
                # commits were that much older than its write; see REFRESH_POLL_S)
                for msg in c.consume(num_messages=5000, timeout=REFRESH_POLL_S):
                    record_topic, partition, offset = msg.topic(), msg.partition(), msg.offset()
                    if msg.error() is not None or record_topic is None or partition is None or offset is None:
                        continue  # an error event; the client sets all three on every record it returns
                    key = (record_topic, partition)
                    found = self._parts.get(key)
                    if found is None:
                        continue
                    found.observe(offset, source_offset_of(msg.headers()))
                    if key in todo and found.scanned_to >= todo[key]:
                        del todo[key]
            if todo:
                raise TimeoutError(f"offset index: could not read {sorted(todo)} to their end in {timeout_s:.0f}s")
        finally:
            c.unassign()

    def translate(self, topic: str, partition: int, committed: int, refresh: bool = True) -> int:
        """Target offset a group should start from, given its committed source offset."""
        if refresh:
            self.refresh([(topic, partition)])
        return self.partition(topic, partition).translate(committed)

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
