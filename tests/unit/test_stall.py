"""The stall figure: per source partition, the longest time records waited on the source while no copy
arrived (``harness.drill.checker.stall``), and how the checker reports it."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from mirrordrill.harness.drill.checker import FlowInput, check_flow
from mirrordrill.harness.drill.checker.stall import (
    NO_STALL,
    PartitionStall,
    event_stall_ms,
    flow_stall,
    partition_stall,
    partition_stalls,
)
from mirrordrill.loadgen.histories.records import AckedSend, LagSample, TargetRecord, TimelineEvent

SETTINGS = settings(max_examples=300, deadline=None)


@st.composite
def histories(draw, lost: bool = True):
    """A partition's records on a small clock: ack times, and arrival times (None: never copied)."""
    n = draw(st.integers(0, 12))
    acked = draw(st.lists(st.integers(0, 60), min_size=n, max_size=n))
    copied = [draw(st.one_of(st.none(), st.integers(0, 80)) if lost else st.integers(0, 80)) for _ in acked]
    return acked, copied, draw(st.integers(0, 100))


def _every_stall_walked(acked: list[int], copied: list[int | None], end: int) -> list[tuple[int, int]]:
    """The definition walked one millisecond at a time, from each record's own interval: every stall."""
    times = [*acked, *(c for c in copied if c is not None)]
    if not times:
        return []
    end = max(end, *times)
    arrivals = {c for c in copied if c is not None}
    stalls, run = [], None
    for t in range(min(times), end + 1):
        held = any(a <= t < (end + 1 if c is None else c) for a, c in zip(acked, copied, strict=True))
        if run is not None and (t in arrivals or not held or t == end):
            if t > run:
                stalls.append((run, t))
            run = None
        if run is None and held and t < end:
            run = t
    return stalls


def _by_every_millisecond(acked: list[int], copied: list[int | None], end: int) -> PartitionStall:
    best = NO_STALL
    for start, stop in _every_stall_walked(acked, copied, end):
        if stop - start > best.stall_ms:
            best = PartitionStall(stop - start, start)
    return best


@SETTINGS
@given(histories())
def test_the_sweep_is_the_definition_walked_millisecond_by_millisecond(history):
    acked, copied, end = history
    assert partition_stall(acked, copied, end) == _by_every_millisecond(acked, copied, end)


@SETTINGS
@given(histories())
def test_every_stall_is_the_definition_walked_millisecond_by_millisecond(history):
    acked, copied, end = history
    assert partition_stalls(acked, copied, end) == _every_stall_walked(acked, copied, end)


@SETTINGS
@given(histories(), st.integers(-10, 110), st.one_of(st.none(), st.integers(0, 40)))
def test_an_events_stall_is_the_longest_running_at_some_moment_of_it(history, lo, length):
    acked, copied, end = history
    hi = None if length is None else lo + length
    stalls = partition_stalls(acked, copied, end)
    last = max((stop for _, stop in stalls), default=0)
    moments = range(lo, (last if hi is None else hi) + 1)
    running = [stop - start for start, stop in stalls if any(start <= t < stop for t in moments)]
    assert event_stall_ms(stalls, (lo, hi)) == max(running, default=0)


@SETTINGS
@given(histories(lost=False))
def test_copying_without_a_gap_stalls_no_longer_than_the_longest_wait_for_an_arrival(history):
    acked, copied, end = history
    arrivals = sorted(set(c for c in copied if c is not None))
    stall = partition_stall(acked, copied, end)
    if not acked:
        assert stall == NO_STALL
        return
    # before the first arrival, records wait at most from the first ack; then between arrivals
    waits = [max(0, arrivals[0] - min(acked)), *(b - a for a, b in itertools.pairwise(arrivals))]
    assert stall.stall_ms <= max(waits)


@SETTINGS
@given(st.integers(1, 50), st.integers(1, 10_000), st.integers(0, 5), st.integers(1, 30))
def test_a_planted_gap_with_a_backlog_is_a_stall_at_least_that_long(every, gap, backlog, records):
    # records acked every `every` ms and copied 1 ms later, then the copies stop for `gap` ms while
    # `backlog` + 1 records wait, then everything arrives
    acked = [i * every for i in range(records)]
    copied: list[int | None] = [a + 1 for a in acked]
    stopped_at = acked[-1] + 1
    acked += [stopped_at + i for i in range(backlog + 1)]
    copied += [stopped_at + gap] * (backlog + 1)
    stall = partition_stall(acked, copied, 0)
    assert stall.stall_ms >= gap
    # the records before the stop each waited 1 ms: a 1 ms gap ties with the first of them
    assert stall == (PartitionStall(gap, stopped_at) if gap > 1 else PartitionStall(1, 0))


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 500)), max_size=30), st.integers(0, 20_000))
def test_no_backlog_is_no_stall(records, end):
    # every copy arrived no later than its acknowledgement: the source never held a record uncopied
    acked = [a for a, _ in records]
    copied: list[int | None] = [a - early for a, early in records]
    assert partition_stall(acked, copied, end) == NO_STALL


def test_a_lost_record_stalls_its_partition_until_the_observation_ends():
    assert partition_stall([100, 200, 300], [150, 250, None], 9_000) == PartitionStall(8_700, 300)
    # the end is never before the histories' own latest time
    assert partition_stall([100, 200], [None, 150], 0) == PartitionStall(50, 100)
    assert partition_stall([], [], 5_000) == NO_STALL


def test_a_tie_keeps_the_earliest_stall_and_an_arrival_splits_a_stall():
    assert partition_stall([0, 20], [10, 30], 0) == PartitionStall(10, 0)
    # record 0 waits from 0 to 100; record 1's copy arrives at 40: two stalls, 40 and 60 long
    assert partition_stall([0, 30], [100, 40], 0) == PartitionStall(60, 40)


def test_the_flow_stall_is_the_longest_partitions_and_none_is_zero():
    stall = flow_stall({("orders", 1): ([0], [2_500]), ("orders", 0): ([0], [1_000]), ("audit", 0): ([5], [3])}, None)
    assert stall.stall_s == 2.5
    assert list(stall.summary_by_partition()) == ["audit-0", "orders-0", "orders-1"]
    assert stall.summary_by_partition()["orders-1"] == {"stall_s": 2.5, "started_ms": 0}
    assert stall.summary_by_partition()["audit-0"] == {"stall_s": 0.0, "started_ms": None}
    empty = flow_stall({}, None)
    assert (empty.stall_s, empty.by_partition) == (0.0, {})


def _ack(partition: int, seq: int, ack_ms: int) -> AckedSend:
    return AckedSend("A", "orders", partition, seq, "p", seq, ack_ms - 1, ack_ms, 10, 7)


def _read(partition: int, seq: int, seen_ms: int) -> TargetRecord:
    return TargetRecord("B", "A.orders", partition, seq, "p", seq, seen_ms, True, 7)


def test_the_checker_reports_a_replicator_stop_per_partition_from_acks_and_first_sightings():
    base = 1_700_000_000_000
    # partition 0: copied 20 ms after each ack until record 49 (copied at +510 ms); the replicator
    # restarts and copies records 50..99 (acked from +500 ms) from +6 s on
    acked = [_ack(0, i, base + 10 * i) for i in range(100)]
    seen = [_read(0, i, base + 10 * i + 20) for i in range(50)]
    seen += [_read(0, i, base + 6_000 + i - 50) for i in range(50, 100)]
    seen += [_read(0, 3, base + 7_000)]  # a duplicate's later read moves nothing
    # partition 1: one record, lost; the end-offset sampler watched until +9 s
    acked.append(_ack(1, 100, base + 4_000))
    samples = [LagSample(base + 9_000, "A", "orders", 1, 1)]
    result = check_flow(FlowInput("A", "B", {"A.orders": "orders"}, acked, seen, lag_samples=samples))
    assert result.stall.by_partition == {("orders", 0): PartitionStall(6_000 - 510, base + 510),
                                         ("orders", 1): PartitionStall(5_000, base + 4_000)}
    summary = result.summary()
    assert summary["stall_s"] == 5.49
    assert summary["stall_by_partition"] == {"orders-0": {"stall_s": 5.49, "started_ms": base + 510},
                                             "orders-1": {"stall_s": 5.0, "started_ms": base + 4_000}}


def test_each_timeline_event_gets_the_longest_stall_it_overlapped():
    base = 1_700_000_000_000
    # partition 0 copied 20 ms after each ack, but nothing arrives from +1,000 to +4,000 (a kill at
    # +1,010, the step lasting while the restarted driver comes back) nor from +8,000 to +10,000 (a
    # pause from +8,100 to +9,000) nor from +12,100 to +13,000 (a kill at +12,000 whose step ended at
    # once: the records in flight land first); partition 1 stops once, shorter, during the first kill
    gaps = ((980, 4_000), (7_980, 10_000), (12_080, 13_000))

    def arrival(i: int) -> int:
        due = 10 * i + 20
        return next((end for start, end in gaps if start <= due < end), due)
    acked = [_ack(0, i, base + 10 * i) for i in range(1_400)]
    seen = [_read(0, i, base + arrival(i)) for i in range(1_400)]
    acked += [_ack(1, 2_000 + i, base + 10 * i) for i in range(300)]
    seen += [_read(1, 2_000 + i, base + 10 * i + 20) for i in range(300) if i != 150]
    seen += [_read(1, 2_150, base + 2_500)]
    timeline = (TimelineEvent("kill", "kill_replicator_node", base + 1_010, base + 3_500, "ok", ""),
                TimelineEvent("pause", "pause_replicator_node", base + 8_100, base + 9_000, "ok", ""),
                TimelineEvent("quiet", "sleep", base + 4_100, base + 5_000, "ok", ""),
                TimelineEvent("kill again", "kill_replicator_node", base + 12_000, base + 12_050, "ok", ""))
    result = check_flow(FlowInput("A", "B", {"A.orders": "orders"}, acked, seen, timeline=timeline))
    # the second kill's stall began 20 ms after its step ended (within STEP_GRACE_MS): still its own
    assert [e.stall_s for e in result.events] == [3.03, 2.03, 0.01, 0.93]
    assert result.stall.stall_s == 3.03
    assert [e["stall_s"] for e in result.summary()["events"]] == [3.03, 2.03, 0.01, 0.93]


def test_the_lag_and_latency_plots_mark_the_longest_stall(monkeypatch):
    from mirrordrill.harness.drill.results import FlowResults, FlowSummary, LatencySample
    from mirrordrill.reports import plots

    base = 1_700_000_000_000
    acked = [_ack(p, 100 * p + i, base + 10 * i) for p in (0, 1) for i in range(10)]
    seen = [_read(0, i, base + 10 * i + 5) for i in range(10)]
    seen += [_read(1, 100 + i, base + 3_000 + i) for i in range(10)]  # partition 1 waits from +0 to +3 s
    result = check_flow(FlowInput("A", "B", {"A.orders": "orders"}, acked, seen))
    flow = FlowResults("A->B", FlowSummary.of(result.summary(), "A->B", ()), result.series,
                       (LatencySample(base + 3_000, 3_000),))
    figures = []
    monkeypatch.setattr(plots, "_png", lambda fig: figures.append(fig) or b"")
    plots.lag_plot(flow, [], base)
    plots.latency_over_time_plot(flow, [], base)
    for fig in figures:
        spans = [p for p in fig.axes[0].patches if p.get_label() == "longest stall: 3.0 s (orders-1)"]
        assert len(spans) == 1 and spans[0].get_hatch() == "//"
        assert spans[0].get_x() == 0.0 and spans[0].get_width() == 3.0


def test_an_expectation_on_the_stall_is_judged_from_the_flow_summary():
    from mirrordrill.harness.drill.metrics import METRICS
    from mirrordrill.harness.drill.results import FlowSummary
    from mirrordrill.harness.drill.schema import parse_expectation

    base = 1_700_000_000_000
    acked = [_ack(0, i, base + 10 * i) for i in range(10)]
    seen = [_read(0, i, base + 4_000 + i) for i in range(10)]  # waited from +0 to +4 s
    entry = FlowSummary.of(check_flow(FlowInput("A", "B", {"A.orders": "orders"}, acked, seen)).summary(),
                           "A->B", ())
    actual = METRICS["stall_s"].read(entry)
    assert actual == 4.0
    assert parse_expectation("stall_s", 5).holds(actual)
    assert not parse_expectation("stall_s", "< 4").holds(actual)
    assert not parse_expectation("stall_s[A->B]", 3.5).holds(actual)


def test_the_end_of_drill_table_prints_each_flows_stall():
    import json
    from pathlib import Path

    from mirrordrill.harness.drill.results import SCHEMA, DrillSummary, FlowSummary
    from mirrordrill.harness.drill.summary import render_table

    base = 1_700_000_000_000
    acked = [_ack(0, i, base + 10 * i) for i in range(10)]
    seen = [_read(0, i, base + 4_000 + i) for i in range(10)]
    flow = FlowSummary.of(check_flow(FlowInput("A", "B", {"A.orders": "orders"}, acked, seen)).summary(), "A->B", ())
    raw = {**json.loads((Path(__file__).parent / "fixtures" / "summary-before-schema.json").read_text()),
           "schema": SCHEMA, "flows": [flow.model_dump(mode="json", by_alias=True)]}
    lines = render_table(DrillSummary.model_validate(raw)).splitlines()
    head = next(line for line in lines if line.strip().startswith("flow"))
    row = next(line for line in lines if line.strip().startswith("A->B"))
    assert head.split()[-3:] == ["stall", "s", "rec/s"]
    assert row.split()[-2] == "4.0"
