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
from collections.abc import Callable, Mapping, Sequence
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
# The first look back from a partition's end (records): a transactional flow's partition ends in
# commit or abort markers, which a read_committed read skips, so a first look at the last offset
# alone found nothing and each doubling cost a fetch of its own.
FIRST_LOOK = 16


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


def _newest_owned_in(c: Consumer, ranges: Mapping[tuple[str, int], tuple[int, int]], origin: FlowOrigin,
                     timeout_s: float) -> dict[tuple[str, int], Copy | None]:
    """Per target partition, the last record of ``origin`` at its positions [start, end), or None; the
    partitions are read in one assignment (a fetch each at once, not a round trip after another)."""
    c.assign([TopicPartition(t, p, start) for (t, p), (start, _) in ranges.items()])
    found: dict[tuple[str, int], Copy | None] = dict.fromkeys(ranges)
    pending = set(ranges)
    deadline = time.monotonic() + timeout_s
    try:
        while pending and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            where = (str(m.topic()), int(m.partition() or 0))  # set on every record and EOF the client returns
            err, offset = m.error(), m.offset()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    pending.discard(where)
                continue
            if where not in pending or offset is None:
                continue
            end = ranges[where][1]
            if offset >= end:
                pending.discard(where)
                continue
            src = origin.owns(m.headers())
            if src is not None:
                found[where] = Copy(src, m.key(), m.value())
            if offset >= end - 1:
                pending.discard(where)
        if pending:
            raise TimeoutError(f"reading {sorted(pending)} of {sorted(ranges.items())} took over {timeout_s:.0f}s")
    finally:
        c.unassign()
    return found


def copied_up_to(c: Consumer, topic: str, partition: int, origin: FlowOrigin,
                 window: int = SCAN_WINDOW, timeout_s: float = 10.0) -> int | None:
    """Source offset of the newest record in the target partition that ``origin`` copied; None if none."""
    copy = newest_copy(c, topic, partition, origin, window, timeout_s)
    return copy.source_offset if copy is not None else None


def newest_copy(c: Consumer, topic: str, partition: int, origin: FlowOrigin,
                window: int = SCAN_WINDOW, timeout_s: float = 10.0) -> Copy | None:
    """The newest record in the target partition that ``origin`` copied; None if none (``newest_copies``)."""
    return newest_copies(c, [(topic, partition)], origin, window, timeout_s)[(topic, partition)]


def newest_copies(c: Consumer, partitions: Sequence[tuple[str, int]], origin: FlowOrigin,
                  window: int = SCAN_WINDOW, timeout_s: float = 10.0) -> dict[tuple[str, int], Copy | None]:
    """Per target partition, the newest record that ``origin`` copied there; None if none.

    Reads the newest ``FIRST_LOOK`` records of every partition first, all in one assignment, then,
    for a partition with none of ``origin``'s among them, windows twice as large further back
    (identity policy: the partition holds others' records too), up to ``window`` records."""
    marks = {where: c.get_watermark_offsets(TopicPartition(*where), timeout=10) for where in partitions}
    out: dict[tuple[str, int], Copy | None] = dict.fromkeys(partitions)
    size = min(FIRST_LOOK, window)
    ends = {where: high for where, (low, high) in marks.items() if high > low}  # where each one's next look ends
    while ends:
        looks = {where: (max(marks[where][0], end - size), end) for where, end in ends.items()}
        for where, copy in _newest_owned_in(c, looks, origin, timeout_s).items():
            out[where] = copy
        low_of = {where: marks[where][0] for where in looks}
        ends = {where: start for where, (start, _) in looks.items()
                if out[where] is None and start > low_of[where] and marks[where][1] - start < window}
        size *= 2
    for where, copy in out.items():
        low, high = marks[where]
        if copy is None and high - low > window:
            log.warning("%s[%d]: no record of %s in the newest %d; treating the partition as not copied yet",
                        where[0], where[1], origin.source_alias, window)
    return out


def copies_held(source: Consumer, copies: Mapping[tuple[str, int], Copy], lows: Mapping[tuple[str, int], int],
                highs: Mapping[tuple[str, int], int], timeout_s: float = 10.0) -> dict[tuple[str, int], bool]:
    """Per source partition, whether the source still holds, at its copy's source offset, the record copied.

    Not so when the source's log was recreated (a wiped cluster rebuilt by a failback, a topic
    deleted and created again): its offsets started again at 0, and resuming after the old
    copy's offset would skip the new log's records up to it. A record that retention already
    removed (below ``lows``) cannot be compared, and counts as held: it was there. The records
    are read in one assignment, not a round trip over the WAN per partition."""
    held: dict[tuple[str, int], bool] = {}
    reads: dict[tuple[str, int], Copy] = {}
    for where, copy in copies.items():
        if copy.source_offset >= highs[where] or copy.source_offset < lows[where]:
            held[where] = copy.source_offset < lows[where]
        else:
            reads[where] = copy
    if not reads:
        return held
    for topic in {t for t, _ in reads}:  # the consumer's metadata must know partitions added since it last looked
        source.list_topics(topic, timeout=timeout_s)
    source.assign([TopicPartition(t, p, copy.source_offset) for (t, p), copy in reads.items()])
    deadline = time.monotonic() + timeout_s
    try:
        while reads and time.monotonic() < deadline:
            m = source.poll(0.5)
            if m is None or m.error():
                continue
            where = (str(m.topic()), int(m.partition() or 0))  # set on every record the client returns
            if where not in reads:
                continue  # a later record of a partition already answered
            copy = reads.pop(where)
            held[where] = m.offset() == copy.source_offset and m.key() == copy.key and m.value() == copy.value
    finally:
        source.unassign()
    if reads:
        raise TimeoutError(f"reading {sorted(reads)} at their copies' offsets took over {timeout_s:.0f}s")
    return held


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
