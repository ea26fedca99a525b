"""The flow check one record at a time: the per-record computation the checker used before it was
vectorised (harness.drill.checker.columnar), kept only as the oracle the agreement test compares
the columnar check against (tests/unit/test_checker_columnar.py)."""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

# The end-offset series is plain Python over a few samples, not what the oracle checks: the product's.
from mirrordrill.harness.drill.checker.columnar import _latest_end_offsets
from mirrordrill.harness.drill.checker.contract import (
    EventImpact,
    FlowInput,
    FlowResult,
    IdSamples,
    MessageId,
    SecondSeries,
    TopicResult,
    wipe_times,
)
from mirrordrill.harness.drill.checker.figures import Tally, event_impact, figure_fields, first_ids, flow_series, latency_stats
from mirrordrill.harness.drill.checker.stall import FlowStall, PartitionKey, event_windows, flow_stall
from mirrordrill.loadgen.histories.records import AckedSend, TimelineEvent

Position = tuple[str, int, int]  # (topic, partition, offset)


@dataclass
class _Ledger:
    """What the source promised about one id."""

    first: AckedSend
    positions: set[Position] = field(default_factory=set)
    checksums: set[int] = field(default_factory=set)


@dataclass
class _Sighting:
    """What the observer saw of one id on the target."""

    first: tuple[int, str, int, int]  # (seen_ts_ms, topic, partition, offset)
    positions: set[Position] = field(default_factory=set)
    checksums: set[int] = field(default_factory=set)
    bad_read: bool = False  # some read's recomputed payload checksum did not match


def _ack_order(a: AckedSend) -> tuple[int, str, int, int]:
    return (a.ack_ts_ms, a.topic, a.partition, a.offset)


def check_flow(inp: FlowInput) -> FlowResult:
    """Every figure of one replication flow, exact."""
    return _check_flow(inp)


def _check_flow(inp: FlowInput) -> FlowResult:
    topic_map = dict(inp.topic_map)
    source_topics = sorted(set(topic_map.values()))
    ledger = _ledger(inp, set(source_topics))
    sightings = _sightings(inp, topic_map)
    uncertain_topic = _uncertain_topics(inp, set(source_topics))
    wipes = wipe_times(inp.timeline, inp.source)
    in_flight = _in_flight(ledger, sightings, wipes) if inp.drained is False else set()
    counts = _FlowCounts(source_topics, topic_map, _reordered(ledger, sightings, wipes), in_flight)
    for mid in ledger.keys() | sightings.keys():
        counts.count(mid, ledger.get(mid), sightings.get(mid), uncertain_topic)

    source_ends, target_ends = _latest_end_offsets(inp, source_topics, topic_map)
    series = flow_series(counts.acks, counts.caught_up, counts.first_seen, source_ends, target_ends,
                         topic_map)
    total = Tally()
    for t in counts.tallies.values():
        total.add(t)
    all_latencies = [v for vs in counts.latencies.values() for v in vs]
    stall = _stall(inp, ledger, sightings, set(source_topics))
    return FlowResult(
        source=inp.source, target=inp.target, topics=tuple(source_topics),
        topic_map=topic_map, by_topic=counts.by_topic(), series=series,
        samples=IdSamples(**{k: first_ids(v) for k, v in counts.kinds.items()}),
        events=_event_impacts(inp.timeline, ledger, sightings, in_flight, series.lag, stall.by_window),
        stall=stall,
        **figure_fields(total, latency_stats(all_latencies)))


def _stall(inp: FlowInput, ledger: dict[MessageId, _Ledger], sightings: dict[MessageId, _Sighting],
           source_topics: set[str]) -> FlowStall:
    """Per source partition, its ids' first ack and first sighting, as the stall branch's reference had it."""
    partitions: dict[PartitionKey, tuple[list[int], list[int | None]]] = {}
    for mid, led in ledger.items():
        acked, copied = partitions.setdefault((led.first.topic, led.first.partition), ([], []))
        seen = sightings.get(mid)
        acked.append(led.first.ack_ts_ms)
        copied.append(None if seen is None else seen.first[0])
    samples = (s.ts_ms for s in inp.lag_samples
               if (s.cluster == inp.source and s.topic in source_topics)
               or (s.cluster == inp.target and s.topic in inp.topic_map))
    end = max((*(led.first.ack_ts_ms for led in ledger.values()),
               *(s.first[0] for s in sightings.values()), *samples), default=None)
    return flow_stall(partitions, end, event_windows(inp.timeline))


def _ledger(inp: FlowInput, source_topics: set[str]) -> dict[MessageId, _Ledger]:
    """Per id, its first ack on the source and every position and checksum it was acked with."""
    ledger: dict[MessageId, _Ledger] = {}
    for a in inp.acked:
        if a.cluster != inp.source or a.topic not in source_topics:
            continue
        entry = ledger.get((a.producer_id, a.seq))
        if entry is None:
            entry = ledger[(a.producer_id, a.seq)] = _Ledger(a)
        elif _ack_order(a) < _ack_order(entry.first):
            entry.first = a
        entry.positions.add((a.topic, a.partition, a.offset))
        entry.checksums.add(a.checksum)
    return ledger


def _sightings(inp: FlowInput, topic_map: dict[str, str]) -> dict[MessageId, _Sighting]:
    """Per id, its first read on the target and every position and checksum it was read with."""
    sightings: dict[MessageId, _Sighting] = {}
    for o in inp.observed:
        if o.cluster != inp.target or o.topic not in topic_map:
            continue
        read = (o.seen_ts_ms, o.topic, o.partition, o.offset)
        s = sightings.get((o.producer_id, o.seq))
        if s is None:
            s = sightings[(o.producer_id, o.seq)] = _Sighting(read)
        elif read < s.first:
            s.first = read
        s.positions.add((o.topic, o.partition, o.offset))
        s.checksums.add(o.checksum)
        s.bad_read = s.bad_read or not o.checksum_ok
    return sightings


def _uncertain_topics(inp: FlowInput, source_topics: set[str]) -> dict[MessageId, str]:
    """Per id sent without an answer from the source, the (smallest) topic it was sent to."""
    out: dict[MessageId, str] = {}
    for u in inp.uncertain:
        if u.cluster == inp.source and u.topic in source_topics:
            key = (u.producer_id, u.seq)
            out[key] = min(u.topic, out.get(key, u.topic))
    return out


class _FlowCounts:
    """The per-topic tallies, latencies, sampled ids and per-second counts, one id at a time."""

    def __init__(self, source_topics: list[str], topic_map: dict[str, str],
                 reordered: set[MessageId], in_flight: set[MessageId]) -> None:
        self.topic_map = topic_map
        self.reordered, self.in_flight = reordered, in_flight
        self.tallies = {t: Tally() for t in source_topics}
        self.latencies: dict[str, list[int]] = {t: [] for t in source_topics}
        self.kinds: dict[str, list[MessageId]] = defaultdict(list)
        self.acks: dict = defaultdict(int)       # (topic, partition, second) -> first acks
        self.caught_up: dict = defaultdict(int)  # (topic, partition, second) -> acked and seen by then
        self.first_seen: dict = defaultdict(int)  # second -> replicated ids first seen

    def count(self, mid: MessageId, led: _Ledger | None, seen: _Sighting | None,
              uncertain_topic: dict[MessageId, str]) -> None:
        """Count one id in the one topic it belongs to (see the module's docstring)."""
        if led is not None:
            topic = led.first.topic
        elif mid in uncertain_topic:
            topic = uncertain_topic[mid]
        elif seen is not None:
            topic = self.topic_map[seen.first[1]]
        else:
            return  # neither acked, uncertain nor seen: the id is in no history
        if led is not None:
            self._acked(topic, mid, led, seen)
        if seen is not None:
            self._seen(topic, mid, led, seen, mid in uncertain_topic)
        if led is not None and seen is not None:
            self._replicated(topic, mid, led, seen)

    def _mark(self, topic: str, kind: str, mid: MessageId, n: int = 1) -> None:
        # A verdict on one id: its topic's count grows by n, the id joins the kind's sample.
        setattr(self.tallies[topic], kind, getattr(self.tallies[topic], kind) + n)
        self.kinds[kind].append(mid)

    def _acked(self, topic: str, mid: MessageId, led: _Ledger, seen: _Sighting | None) -> None:
        t = self.tallies[topic]
        t.acked += 1
        t.source_duplicates += len(led.positions) - 1
        self.acks[(topic, led.first.partition, led.first.ack_ts_ms // 1000)] += 1
        if seen is None:
            self._mark(topic, "in_flight" if mid in self.in_flight else "lost", mid)

    def _seen(self, topic: str, mid: MessageId, led: _Ledger | None, seen: _Sighting,
              uncertain: bool) -> None:
        if len(seen.positions) > 1:
            self._mark(topic, "duplicates", mid, len(seen.positions) - 1)
        mismatch = led is not None and not seen.checksums <= led.checksums
        if seen.bad_read or mismatch:
            self._mark(topic, "corrupted", mid)
        if led is None:
            self._mark(topic, "uncertain_delivered" if uncertain else "unexpected", mid)

    def _replicated(self, topic: str, mid: MessageId, led: _Ledger, seen: _Sighting) -> None:
        seen_ts, remote, partition, _ = seen.first
        t = self.tallies[topic]
        t.replicated += 1
        t.replicated_bytes += led.first.size_bytes
        self.latencies[topic].append(seen_ts - led.first.send_ts_ms)
        t.first_send_ts_ms = _min(t.first_send_ts_ms, led.first.send_ts_ms)
        t.last_first_seen_ts_ms = _max(t.last_first_seen_ts_ms, seen_ts)
        if partition != led.first.partition or self.topic_map[remote] != topic:
            self._mark(topic, "misplaced", mid)
        if mid in self.reordered:
            self._mark(topic, "reordered", mid)
        self.first_seen[seen_ts // 1000] += 1
        caught = max(led.first.ack_ts_ms, seen_ts)
        self.caught_up[(topic, led.first.partition, caught // 1000)] += 1

    def by_topic(self) -> dict[str, TopicResult]:
        """Each source topic's figures, with the remote topics replicating it."""
        return {
            topic: TopicResult(
                topic=topic,
                remote_topics=tuple(sorted(r for r, s in self.topic_map.items() if s == topic)),
                **figure_fields(tally, latency_stats(self.latencies[topic])))
            for topic, tally in self.tallies.items()}


def _event_impacts(timeline: Sequence[TimelineEvent], ledger: dict[MessageId, _Ledger],
                   sightings: dict[MessageId, _Sighting], in_flight: set[MessageId],
                   lag: SecondSeries, stalls_ms: Sequence[int]) -> tuple[EventImpact, ...]:
    """Per timeline event: the ids first acked while it lasted, how many of those were lost, its stall."""
    events = []
    for e, stall_ms in zip(timeline, stalls_ms, strict=True):
        end = e.end_ts_ms
        inside = [mid for mid, led in ledger.items()
                  if e.start_ts_ms <= led.first.ack_ts_ms and (end is None
                                                               or led.first.ack_ts_ms <= end)]
        lost = sum(1 for mid in inside if mid not in sightings and mid not in in_flight)
        events.append(event_impact(e, len(inside), lost, lag, stall_ms))
    return tuple(events)


def _reordered(ledger: dict[MessageId, _Ledger],
               sightings: dict[MessageId, _Sighting], wipes: list[int]) -> set[MessageId]:
    """Replicated ids that landed below an earlier source record of their partition.

    Walk each source partition in source offset order; a record is reordered when its
    first target position is lower than the highest first target position, in the same
    target partition, of a record before it. A wiped source starts its partitions again at
    offset 0: each incarnation (records acked between two wipes) is walked on its own.
    """
    walks: dict[tuple[str, int, int], list[tuple[int, MessageId]]] = defaultdict(list)
    for mid, led in ledger.items():
        if mid in sightings:
            epoch = bisect_right(wipes, led.first.ack_ts_ms)
            walks[(led.first.topic, led.first.partition, epoch)].append((led.first.offset, mid))
    out: set[MessageId] = set()
    for walk in walks.values():
        walk.sort()
        highest: dict[tuple[str, int], int] = {}  # target (topic, partition) -> offset
        for _, mid in walk:
            _, remote, partition, offset = sightings[mid].first
            top = highest.get((remote, partition))
            if top is not None and offset < top:
                out.add(mid)
            else:
                highest[(remote, partition)] = offset
    return out


def _in_flight(ledger: dict[MessageId, _Ledger], sightings: dict[MessageId, _Sighting],
               wipes: list[int]) -> set[MessageId]:
    """Acked ids not seen on the target that may still be on their way: no later record of
    their source partition (same incarnation, see :func:`_reordered`) reached the target.

    An unseen id below a seen one was skipped (the replicator reads a partition in order), so
    it is lost even when replication never drained; above every seen one, nobody can tell yet.
    """
    highest_seen: dict[tuple[str, int, int], int] = {}
    for mid, led in ledger.items():
        if mid in sightings:
            key = (led.first.topic, led.first.partition, bisect_right(wipes, led.first.ack_ts_ms))
            highest_seen[key] = max(led.first.offset, highest_seen.get(key, -1))
    out = set()
    for mid, led in ledger.items():
        if mid not in sightings:
            key = (led.first.topic, led.first.partition, bisect_right(wipes, led.first.ack_ts_ms))
            if led.first.offset > highest_seen.get(key, -1):
                out.add(mid)
    return out


def _min(a: int | None, b: int) -> int:
    return b if a is None else min(a, b)


def _max(a: int | None, b: int) -> int:
    return b if a is None else max(a, b)
