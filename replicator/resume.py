"""Where a flow's copy stopped, read from the target itself, and where its next query starts.

Every record the replicator writes carries its source offset (``SOURCE_OFFSET_HEADER``) and,
under the identity policy, the clusters it came through (``PROVENANCE_HEADER``, this flow's
source alias last). Source partition p always lands in target partition p, in order. So the
newest record of target partition p that this flow wrote says exactly how far the flow's copy
of source partition p got, whatever Spark's checkpoint says: a Spark checkpoint is committed
after its batch's writes, so after a kill it lags the target by up to a whole batch, and a
query resumed from it writes that batch again (the duplicates of the crash drill).

Each query therefore starts on a *fresh* checkpoint with per-partition ``startingOffsets``
one past the newest copied record (see ``FlowRuntime._start``). The alternative, keeping the
checkpoint and filtering ``offset > copied[p]``, is correct too but still re-reads the replayed
batch over the WAN, and its behaviour when the subscribed topic set changes is what Spark
calls undefined; with a fresh checkpoint the target is the only record of progress.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition

from mirrordrill.replicator.headers import PROVENANCE_HEADER, RecordHeaders, header_pairs, source_offset_of

log = logging.getLogger("replicator")

# Spark's sentinels in a startingOffsets JSON
EARLIEST, LATEST = -2, -1

# How far back (records) to look for this flow's newest record in a target partition that
# others write too (identity policy: local producers, other flows). Beyond it the partition is
# treated as having nothing of this flow (a warning says so).
SCAN_WINDOW = 100_000


@dataclass(frozen=True)
class FlowOrigin:
    """Which records of a target partition are this flow's."""

    source_alias: str
    # identity policy: the provenance header's last hop must be the source; otherwise the
    # remote topic is this flow's alone and any record with a source offset is ours
    by_provenance: bool

    def owns(self, headers: RecordHeaders | None) -> int | None:
        """The source offset of a record this flow wrote, else None."""
        src = source_offset_of(headers)
        if src is None or not self.by_provenance:
            return src
        prov = [v for k, v in header_pairs(headers) if k == PROVENANCE_HEADER]
        if not prov or prov[-1].decode(errors="replace").split(",")[-1] != self.source_alias:
            return None
        return src


def target_consumer(conf: dict[str, Any]) -> Consumer:
    """A read-only consumer for position probes: no group commits, EOF events to stop at the end."""
    return Consumer(conf | {"group.id": "__mirrordrill-resume", "enable.auto.commit": False,
                            "enable.partition.eof": True, "fetch.wait.max.ms": 50, "log_level": 0})


@dataclass(frozen=True)
class Copy:
    """The newest record a flow copied into a target partition: where it came from, and what it held."""

    source_offset: int
    key: bytes | None
    value: bytes | None


def _newest_owned_in(c: Consumer, tp: TopicPartition, start: int, end: int, origin: FlowOrigin,
                     timeout_s: float) -> Copy | None:
    """The last record of ``origin`` at positions [start, end), or None."""
    c.assign([TopicPartition(tp.topic, tp.partition, start)])
    found = None
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            err, offset = m.error(), m.offset()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    return found
                continue
            if offset is None:
                continue  # the client sets it on every record it returns
            if offset >= end:
                return found
            src = origin.owns(m.headers())
            if src is not None:
                found = Copy(src, m.key(), m.value())
            if offset >= end - 1:
                return found
        raise TimeoutError(f"reading {tp.topic}[{tp.partition}] {start}..{end} took over {timeout_s:.0f}s")
    finally:
        c.unassign()


def copied_up_to(c: Consumer, topic: str, partition: int, origin: FlowOrigin,
                 window: int = SCAN_WINDOW, timeout_s: float = 10.0) -> int | None:
    """Source offset of the newest record in the target partition that ``origin`` copied; None if none."""
    copy = newest_copy(c, topic, partition, origin, window, timeout_s)
    return copy.source_offset if copy is not None else None


def newest_copy(c: Consumer, topic: str, partition: int, origin: FlowOrigin,
                window: int = SCAN_WINDOW, timeout_s: float = 10.0) -> Copy | None:
    """The newest record in the target partition that ``origin`` copied; None if none.

    Reads the newest record first, then windows twice as large further back (identity policy:
    the partition holds others' records too), up to ``window`` records."""
    tp = TopicPartition(topic, partition)
    low, high = c.get_watermark_offsets(tp, timeout=10)
    end, size = high, 1
    while end > low and high - end < window:
        start = max(low, end - size)
        found = _newest_owned_in(c, tp, start, end, origin, timeout_s)
        if found is not None:
            return found
        end, size = start, size * 2
    if end > low:
        log.warning("%s[%d]: no record of %s in the newest %d; treating the partition as not copied yet",
                    topic, partition, origin.source_alias, window)
    return None


def holds_the_copied_record(source: Consumer, topic: str, partition: int, copy: Copy,
                            timeout_s: float = 10.0) -> bool:
    """Whether the source still holds, at the copy's source offset, the record that was copied.

    Not so when the source's log was recreated (a wiped cluster rebuilt by a failback, a topic
    deleted and created again): its offsets started again at 0, and resuming after the old
    copy's offset would skip the new log's records up to it. A record that retention already
    removed cannot be compared, and counts as held: it was there."""
    # the consumer's metadata must know partitions added since it last looked (else "Unknown partition")
    source.list_topics(topic, timeout=timeout_s)
    low, high = source.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout_s)
    if copy.source_offset >= high:
        return False
    if copy.source_offset < low:
        return True
    source.assign([TopicPartition(topic, partition, copy.source_offset)])
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            m = source.poll(0.5)
            if m is None or m.error():
                continue
            return m.offset() == copy.source_offset and m.key() == copy.key and m.value() == copy.value
        raise TimeoutError(f"reading {topic}[{partition}] at {copy.source_offset} took over {timeout_s:.0f}s")
    finally:
        source.unassign()


def settled(read: Callable[[], dict[Any, Any]], quiet_s: float = 0.5, limit_s: float = 15.0) -> dict[Any, Any]:
    """``read()`` again and again until two readings agree; the last reading.

    After a query of this process stopped, records its cancelled tasks had handed to Spark's
    pooled producer (and that producer's retries) may still land for a moment. This flow's
    own newest copies are what is watched, not the partitions' ends: under the identity policy
    local producers keep the ends moving."""
    deadline = time.monotonic() + limit_s
    before = read()
    while True:
        time.sleep(quiet_s)
        now = read()
        if now == before:
            return now
        if time.monotonic() >= deadline:
            log.warning("copies still landing after %.0fs; resuming from what is there now", limit_s)
            return now
        before = now


class StartPositions:
    """Where each partition starts when the target holds nothing of the flow for it yet.

    The configured starting offsets apply to the topics the flow sees on its very first start;
    "latest" is pinned to concrete offsets then, so a restart before anything was copied does
    not skip what arrived meanwhile. Topics and partitions that appear later start at the
    earliest offset, as MirrorMaker 2 copies a new topic from its beginning. Kept in a small
    file beside the checkpoint so a restarted process knows which topics are new.
    """

    def __init__(self, path: Path, configured: str):
        self.path = path
        self.configured = configured
        self._known: dict[str, dict[str, int]] | None = None
        if path.exists():
            try:
                self._known = json.loads(path.read_text())
            except ValueError:
                log.warning("%s is unreadable; treating every topic as new (copied from its start)", path)
                self._known = {}

    def resolve(self, partitions: dict[str, int], source_ends: Callable[[str, int], list[int]]) -> dict[str, dict[str, int]]:
        """Start position per partition (offset or ``EARLIEST``); records new topics on the way."""
        first_start = self._known is None
        known = self._known or {}
        out: dict[str, dict[str, int]] = {}
        for topic, n in partitions.items():
            have = known.get(topic)
            if have is None:
                have = {}
                if first_start and self.configured == "latest":
                    ends = source_ends(topic, n)
                    have = {str(p): ends[p] for p in range(n)}
                known[topic] = have
            out[topic] = {str(p): have.get(str(p), EARLIEST) for p in range(n)}
            for p, pos in out[topic].items():
                have.setdefault(p, pos)
        self._known = known
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(known))
        tmp.replace(self.path)
        return out


def start_offsets(positions: dict[str, dict[str, int]],
                  copied: dict[tuple[str, int], int | None]) -> dict[tuple[str, int], int]:
    """Each partition's next offset: one past the newest copied record, else its start position."""
    starts: dict[tuple[str, int], int] = {}
    for topic, parts in positions.items():
        for p, pos in parts.items():
            newest = copied.get((topic, int(p)))
            starts[(topic, int(p))] = pos if newest is None else newest + 1
    return starts


def starting_offsets(starts: dict[tuple[str, int], int]) -> str:
    """Spark's startingOffsets JSON of ``start_offsets``."""
    out: dict[str, dict[str, int]] = {}
    for (topic, p), offset in starts.items():
        out.setdefault(topic, {})[str(p)] = offset
    return json.dumps(out, sort_keys=True)


def records_waiting(starts: dict[tuple[str, int], int], log_starts: dict[tuple[str, int], int],
                    ends: dict[tuple[str, int], int]) -> int:
    """Source records from each partition's start to its end. A partition starting at ``EARLIEST``
    counts from its log's start (``log_starts``); one at ``LATEST`` waits on nothing."""
    total = 0
    for where, start in starts.items():
        if start == LATEST:
            continue
        total += max(0, ends[where] - (log_starts[where] if start == EARLIEST else start))
    return total
