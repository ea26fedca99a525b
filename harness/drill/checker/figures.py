"""Pure helpers both checker implementations finish with: from small exact aggregates
(integers keyed by topic, partition or second) to the result dataclasses.

Only the last, driver-side step is shared; each implementation computes the aggregates
itself, so the property and agreement tests still compare two independent computations.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields

from mirrordrill.harness.drill.checker.contract import (
    EMPTY_SERIES,
    MB,
    PERCENTILES,
    SAMPLE_SIZE,
    EventImpact,
    FlowSeries,
    LatencyStats,
    MessageId,
    SecondSeries,
)

# (source topic, source partition, epoch second)
PartitionSecond = tuple[str, int, int]


def nearest_rank(sorted_values: list[int], percent: int) -> int:
    """The value at 1-based rank ceil(percent/100 * n) of an ascending list."""
    n = len(sorted_values)
    if n == 0:
        raise ValueError("no values")
    rank = max(1, -(-n * percent // 100))  # ceil without floating point
    return sorted_values[rank - 1]


def latency_stats(values: Iterable[int]) -> LatencyStats:
    """Nearest-rank p50/p90/p99 and max of some latencies."""
    ordered = sorted(values)
    if not ordered:
        return LatencyStats(0, None, None, None, None)
    p = {name: nearest_rank(ordered, pct) for name, pct in PERCENTILES}
    return LatencyStats(len(ordered), p["p50"], p["p90"], p["p99"], ordered[-1])


def throughput(replicated: int, replicated_bytes: int, first_send_ts_ms: int | None,
               last_first_seen_ts_ms: int | None) -> tuple[float | None, float | None]:
    """Records/s and MB/s over [first send, last first sighting]; None when the span is 0."""
    if replicated == 0 or first_send_ts_ms is None or last_first_seen_ts_ms is None:
        return None, None
    span_ms = last_first_seen_ts_ms - first_send_ts_ms
    if span_ms <= 0:
        return None, None
    return replicated * 1000 / span_ms, replicated_bytes * 1000 / span_ms / MB


@dataclass
class Tally:
    """Integer aggregates of one scope (a topic, or a whole flow)."""

    acked: int = 0
    replicated: int = 0
    lost: int = 0
    in_flight: int = 0
    duplicates: int = 0
    reordered: int = 0
    misplaced: int = 0
    corrupted: int = 0
    unexpected: int = 0
    uncertain_delivered: int = 0
    source_duplicates: int = 0
    replicated_bytes: int = 0
    first_send_ts_ms: int | None = None
    last_first_seen_ts_ms: int | None = None

    def add(self, other: Tally) -> None:
        """Fold another scope's aggregates into this one."""
        for f in fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if f.name == "first_send_ts_ms":
                merged = theirs if mine is None else mine if theirs is None else min(mine, theirs)
            elif f.name == "last_first_seen_ts_ms":
                merged = theirs if mine is None else mine if theirs is None else max(mine, theirs)
            else:
                merged = mine + theirs
            setattr(self, f.name, merged)


def figure_fields(tally: Tally, latency: LatencyStats) -> dict:
    """Keyword arguments of ``ReplicationFigures`` for one scope."""
    per_s, mb_s = throughput(tally.replicated, tally.replicated_bytes,
                             tally.first_send_ts_ms, tally.last_first_seen_ts_ms)
    out = {f.name: getattr(tally, f.name) for f in fields(tally)}
    out.update(latency_ms=latency, throughput_records_s=per_s, throughput_mb_s=mb_s)
    return out


def first_ids(ids: Iterable[MessageId]) -> tuple[MessageId, ...]:
    """The :data:`SAMPLE_SIZE` smallest ids."""
    return tuple(sorted(ids)[:SAMPLE_SIZE])


# --------------------------------------------------------------------------- series


def _dense(counts: Mapping[int, int], start: int, end: int) -> tuple[int, ...]:
    return tuple(counts.get(s, 0) for s in range(start, end + 1))


def _cumulative(values: Iterable[int]) -> list[int]:
    total, out = 0, []
    for v in values:
        total += v
        out.append(total)
    return out


def _by_partition(counts: Mapping[PartitionSecond, int]) -> dict[tuple[str, int], dict[int, int]]:
    out: dict[tuple[str, int], dict[int, int]] = {}
    for (topic, partition, second), n in counts.items():
        out.setdefault((topic, partition), {})[second] = n
    return out


def exact_series(acks: Mapping[PartitionSecond, int], caught_up: Mapping[PartitionSecond, int],
                 first_seen: Mapping[int, int]) -> tuple[SecondSeries, SecondSeries,
                                                         SecondSeries,
                                                         dict[tuple[str, int], SecondSeries]]:
    """Produced, replicated and exact lag (total and per partition) from per-second counts.

    ``acks``: ids whose first ack fell in that second of that source partition;
    ``caught_up``: replicated ids by the second both their ack and their first sighting
    had happened (lag must not go negative when the target sees a record before the
    producer gets its ack); ``first_seen``: replicated ids first seen in that second.
    """
    seconds = {s for (_, _, s) in acks} | {s for (_, _, s) in caught_up} | set(first_seen)
    if not seconds:
        return EMPTY_SERIES, EMPTY_SERIES, EMPTY_SERIES, {}
    start, end = min(seconds), max(seconds)
    acks_of = _by_partition(acks)
    caught_of = _by_partition(caught_up)
    by_partition: dict[tuple[str, int], SecondSeries] = {}
    total = [0] * (end - start + 1)
    produced: dict[int, int] = {}
    for key in sorted(acks_of.keys() | caught_of.keys()):
        a, c = acks_of.get(key, {}), caught_of.get(key, {})
        lag = [x - y for x, y in zip(_cumulative(_dense(a, start, end)),
                                     _cumulative(_dense(c, start, end)), strict=True)]
        by_partition[key] = SecondSeries(start, tuple(lag))
        total = [x + y for x, y in zip(total, lag, strict=True)]
        for s, n in a.items():
            produced[s] = produced.get(s, 0) + n
    return (SecondSeries(start, _dense(produced, start, end)),
            SecondSeries(start, _dense(first_seen, start, end)),
            SecondSeries(start, tuple(total)), by_partition)


def offset_lag_series(source_ends: Mapping[tuple[str, int, int], int],
                      target_ends: Mapping[tuple[str, int, int], int],
                      topic_map: Mapping[str, str]
                      ) -> tuple[SecondSeries, dict[tuple[str, str, int], SecondSeries]]:
    """Source end offset minus target end offset, per second where both were sampled.

    Inputs map ``(topic, partition, second)`` to the end offset of the last sample in that
    second; keys of the result are ``(source topic, remote topic, partition)``.
    """
    points: dict[tuple[str, str, int], dict[int, int]] = {}
    for (remote, partition, second), target_end in target_ends.items():
        source_end = source_ends.get((topic_map[remote], partition, second))
        if source_end is not None:
            key = (topic_map[remote], remote, partition)
            points.setdefault(key, {})[second] = source_end - target_end
    if not points:
        return EMPTY_SERIES, {}
    start = min(min(p) for p in points.values())
    end = max(max(p) for p in points.values())
    by_partition = {k: SecondSeries(start, tuple(v.get(s) for s in range(start, end + 1)))
                    for k, v in sorted(points.items())}
    total: list[int | None] = []
    for i in range(end - start + 1):
        column = [s.values[i] for s in by_partition.values()]
        known = [v for v in column if v is not None]
        total.append(sum(known) if len(known) == len(column) else None)
    return SecondSeries(start, tuple(total)), by_partition


def flow_series(acks: Mapping[PartitionSecond, int], caught_up: Mapping[PartitionSecond, int],
                first_seen: Mapping[int, int], source_ends: Mapping[tuple[str, int, int], int],
                target_ends: Mapping[tuple[str, int, int], int],
                topic_map: Mapping[str, str]) -> FlowSeries:
    """All per-second series of one flow."""
    produced, replicated, lag, lag_by_partition = exact_series(acks, caught_up, first_seen)
    offset_lag, offset_by_partition = offset_lag_series(source_ends, target_ends, topic_map)
    return FlowSeries(produced, replicated, lag, lag_by_partition, offset_lag,
                      offset_by_partition)


def max_lag_during(lag: SecondSeries, start_ts_ms: int, end_ts_ms: int | None) -> int | None:
    """Highest exact lag at the end of the seconds an event touched."""
    end_s = lag.end_s
    if end_s is None:  # no values
        return None
    first = max(start_ts_ms // 1000, lag.start_s)
    last = end_s if end_ts_ms is None else min(end_ts_ms // 1000, end_s)
    # the exact lag has a value every second: the filter only tells the type so
    values = [v for s in range(first, last + 1) if (v := lag.values[s - lag.start_s]) is not None]
    return max(values) if values else None


def event_impact(event, acked: int, lost: int, lag: SecondSeries, stall_ms: int | None = None) -> EventImpact:
    """One timeline event's impact record (``stall_ms``: the longest stall overlapping it)."""
    return EventImpact(event.name, event.kind, event.start_ts_ms, event.end_ts_ms,
                       event.outcome, acked, lost,
                       max_lag_during(lag, event.start_ts_ms, event.end_ts_ms),
                       None if stall_ms is None else stall_ms / 1000)
