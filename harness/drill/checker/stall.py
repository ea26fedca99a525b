"""The stall: how long a source partition held records not yet copied while no copy arrived.

Latency percentiles hide a replicator that stops: records acknowledged during the stop all wait,
but the percentiles only grow with how many of them there were. The stall is the stop itself.

Per source partition, over its records (each with its first acknowledgement time on the source
and its first arrival time on the target, None when it never arrived):

- a record is *outstanding* from its acknowledgement (inclusive) until its copy arrives
  (exclusive); a record whose copy arrived before its acknowledgement never is; one that never
  arrived (lost, or still in flight) is outstanding until ``end_ms``, the end of the observation;
- an *arrival* is the first arrival of any of the partition's records (a copy seen before its
  acknowledgement counts too: the replicator was moving);
- the stall is the longest interval ``[start, end)`` during which at least one record was
  outstanding at every moment and no arrival fell strictly inside. It ends at an arrival or at
  ``end_ms``; a tie keeps the earliest start.

A timeline event's stall (``event_stall_ms``) is the longest stall of any of the flow's partitions
that overlapped the event (it ran at some moment from the event's start to ``STEP_GRACE_MS`` after
its end): the stall a fault caused, where the flow's own stall is the longest of the whole run. The
grace is for a step that ends at once (a kill): what was in flight when it ran still lands, so the
stall it causes begins a moment after it.

Everything is in integer epoch milliseconds, so both checkers agree to the millisecond.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from mirrordrill.loadgen.histories.records import TimelineEvent

PartitionKey = tuple[str, int]  # (source topic, source partition)
Interval = tuple[int, int]  # [start, end) in epoch ms
Window = tuple[int, int | None]  # [start, end], ends inclusive; None: to the end
# how long after a timeline step's end a stall may begin and still be the step's (module docstring): a
# kill's in-flight records land, and the observer reads them, within it
STEP_GRACE_MS = 2000


@dataclass(frozen=True, slots=True)
class PartitionStall:
    """One source partition's longest stall; ``started_ms`` is None when there was none."""

    stall_ms: int
    started_ms: int | None

    @property
    def stall_s(self) -> float:
        return self.stall_ms / 1000

    def as_dict(self) -> dict[str, float | int | None]:
        """The partition's entry of ``stall_by_partition`` in summary.json."""
        return {"stall_s": self.stall_s, "started_ms": self.started_ms}


NO_STALL = PartitionStall(0, None)


@dataclass(frozen=True, slots=True)
class FlowStall:
    """A flow's stall: the longest over its source partitions, and each partition's.

    ``stall_s`` is None only for a result that did not measure it (an older summary); a flow
    with no acknowledged record has 0 and no partitions.
    """

    stall_s: float | None
    by_partition: Mapping[PartitionKey, PartitionStall]
    # per window asked for (``flow_stall``'s ``windows``, in their order): the longest stall overlapping it, ms
    by_window: tuple[int, ...] = ()

    def summary_by_partition(self) -> dict[str, dict[str, float | int | None]]:
        """``stall_by_partition`` of summary.json, keyed ``topic-partition`` as Kafka names a partition."""
        return {partition_name(key): s.as_dict() for key, s in sorted(self.by_partition.items())}


NOT_MEASURED = FlowStall(None, {})


def partition_name(key: PartitionKey) -> str:
    """``orders-3``: Kafka's own spelling of a topic partition (the partition is after the last dash)."""
    return f"{key[0]}-{key[1]}"


def partition_stalls(acked_ms: Sequence[int], copied_ms: Sequence[int | None], end_ms: int) -> list[Interval]:
    """Every stall of one source partition, in time order (see the module's docstring).

    ``acked_ms[i]`` and ``copied_ms[i]`` belong to the same record. An ``end_ms`` earlier than some
    time in the arrays is taken as the latest of them: the observation lasted at least that long.
    """
    if len(acked_ms) != len(copied_ms):
        raise ValueError("acked_ms and copied_ms differ in length")
    starts: Counter[int] = Counter()  # time -> records that became outstanding then
    ends: Counter[int] = Counter()    # time -> outstanding records whose copy arrived then
    arrivals: set[int] = set()
    for acked, copied in zip(acked_ms, copied_ms, strict=True):
        if copied is not None:
            arrivals.add(copied)
        if copied is None or copied > acked:
            starts[acked] += 1
            if copied is not None:
                ends[copied] += 1
    times = sorted(starts.keys() | arrivals)
    if not times:
        return []
    end_ms = max(end_ms, times[-1], *acked_ms)

    stalls: list[Interval] = []
    outstanding, started = 0, None
    for t in times:
        if t in arrivals:  # an arrival closes the stall running until now
            if started is not None:
                stalls.append((started, t))
            started = None
        outstanding += starts[t] - ends[t]
        if outstanding > 0 and started is None:
            started = t
    if started is not None and end_ms > started:
        stalls.append((started, end_ms))
    return stalls


def longest(stalls: Sequence[Interval]) -> PartitionStall:
    """The longest of a partition's stalls (a tie keeps the earliest)."""
    best = NO_STALL
    for start, end in stalls:
        if end - start > best.stall_ms:
            best = PartitionStall(end - start, start)
    return best


def partition_stall(acked_ms: Sequence[int], copied_ms: Sequence[int | None], end_ms: int) -> PartitionStall:
    """The longest stall of one source partition (``partition_stalls``)."""
    return longest(partition_stalls(acked_ms, copied_ms, end_ms))


def overlaps(stall: Interval, window: Window) -> bool:
    """The stall ran at some moment of the window (the window's ends inclusive)."""
    start, end = stall
    lo, hi = window
    return end > lo and (hi is None or start <= hi)


def event_stall_ms(stalls: Iterable[Interval], window: Window) -> int:
    """The longest of ``stalls`` that overlapped the window (0: none did)."""
    return max((end - start for start, end in stalls if overlaps((start, end), window)), default=0)


def event_windows(timeline: Iterable[TimelineEvent]) -> tuple[Window, ...]:
    """Each timeline event's ``[start, end + STEP_GRACE_MS]``."""
    return tuple((e.start_ts_ms, None if e.end_ts_ms is None else e.end_ts_ms + STEP_GRACE_MS) for e in timeline)


def flow_stall(partitions: Mapping[PartitionKey, tuple[Sequence[int], Sequence[int | None]]],
               end_ms: int | None, windows: Sequence[Window] = ()) -> FlowStall:
    """Each partition's stall from its records' ``(acked_ms, copied_ms)`` arrays, the longest, and the
    longest overlapping each window.

    ``end_ms``: when the observation ended (None: at the latest time in the arrays).
    """
    by_partition, by_window = {}, [0] * len(windows)
    for key, (acked, copied) in partitions.items():
        stalls = partition_stalls(acked, copied, end_ms if end_ms is not None else 0)
        by_partition[key] = longest(stalls)
        by_window = [max(ms, event_stall_ms(stalls, w)) for ms, w in zip(by_window, windows, strict=True)]
    return stall_of_partitions(by_partition, tuple(by_window))


def stall_of_partitions(by_partition: Mapping[PartitionKey, PartitionStall],
                        by_window: tuple[int, ...] = ()) -> FlowStall:
    """A flow's stall from its partitions' (0 when it has none: nothing was ever held back)."""
    longest_ms = max((s.stall_ms for s in by_partition.values()), default=0)
    return FlowStall(longest_ms / 1000, dict(sorted(by_partition.items())), by_window)
