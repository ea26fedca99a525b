"""The tail trace (harness.drill.tail_trace): a replicated record's latency split at the source's ack,
the replicator's send and the target's ack, joined by the target position its first sighting took."""

from __future__ import annotations

import polars as pl

from mirrordrill.harness.drill.tail_trace import STEPS, TRACE_SCHEMA, read_traces, tail_trace, traced_records
from mirrordrill.loadgen.histories.records import AckedSend, TargetRecord


def _sent(seq: int, send: int, ack: int) -> AckedSend:
    return AckedSend("east", "orders", 0, seq, "p", seq, send, ack, 100, 0)


def _seen(seq: int, offset: int, seen: int) -> TargetRecord:
    return TargetRecord("west", "east.orders", 0, offset, "p", seq, seen, True, 0)


def _traces(rows: list[tuple[int, int, int]]) -> pl.DataFrame:
    """Trace lines of east.orders-0: (target offset, sent_ms, acked_ms)."""
    return pl.DataFrame([("east.orders", 0, o, s, a) for o, s, a in rows], schema=TRACE_SCHEMA, orient="row")


def test_each_records_steps_add_up_to_its_latency_and_the_tail_is_the_p99_and_above():
    # 100 records of 10 ms each but the last, which waited 500 ms between the source's ack and the send
    acked = [_sent(i, 1000 * i, 1000 * i + 2) for i in range(100)]
    seen = [_seen(i, i, 1000 * i + 10 + (490 if i == 99 else 0)) for i in range(100)]
    traces = _traces([(i, 1000 * i + 5 + (490 if i == 99 else 0), 1000 * i + 8 + (490 if i == 99 else 0))
                      for i in range(100)])
    t = tail_trace(acked, seen, traces, replicated=100)
    assert t is not None and t.traced == 100 and t.replicated == 100
    assert t.tail_from_ms == 10 and t.tail.records == 2  # the p99 (rank 99 of 100) and the one above it
    slowest = t.slowest[0]
    assert slowest.latency_ms == 500 and slowest.source == "orders-0@99" and slowest.target == "east.orders-0@99"
    assert slowest.steps == {"source_ms": 2, "read_ms": 493, "sink_ms": 3, "visible_ms": 2}
    assert sum(slowest.steps.values()) == slowest.latency_ms
    assert t.all.steps["read_ms"].max_ms == 493 and t.all.steps["read_ms"].p50_ms == 3
    assert abs(sum(s.share for s in t.all.steps.values()) - 1) < 0.001


def test_the_tail_names_the_step_its_records_waited_in():
    # 200 records: 197 of 10 ms, three whose target ack came 300 ms after the send
    slow = {50, 100, 150}
    acked = [_sent(i, 1000 * i, 1000 * i + 1) for i in range(200)]
    seen = [_seen(i, i, 1000 * i + 10 + (300 if i in slow else 0)) for i in range(200)]
    traces = _traces([(i, 1000 * i + 4, 1000 * i + 8 + (300 if i in slow else 0)) for i in range(200)])
    t = tail_trace(acked, seen, traces, replicated=200)
    assert t is not None and t.tail_from_ms == 310 and t.tail.records == 3
    assert max(t.tail.steps, key=lambda s: t.tail.steps[s].share) == "sink_ms"
    assert t.tail.steps["sink_ms"].p50_ms == 304
    assert "sink 98%" in t.line("east->west")


def test_a_duplicate_is_traced_at_its_first_sighting_and_untraced_positions_are_left_out():
    acked = [_sent(0, 0, 1), _sent(1, 10, 11), _sent(2, 20, 21)]
    # record 0 copied twice (offsets 0 and 3, the second seen later); record 2's position has no trace line
    seen = [_seen(0, 3, 60), _seen(0, 0, 30), _seen(1, 1, 40), _seen(2, 2, 50)]
    traces = _traces([(0, 5, 20), (1, 15, 35), (3, 45, 55)])
    t = tail_trace(acked, seen, traces, replicated=3)
    assert t is not None and t.traced == 2 and t.replicated == 3
    rows = {r["seq"]: r for r in traced_records(acked, seen, traces).iter_rows(named=True)}
    assert sorted(rows) == [0, 1]
    assert (rows[0]["t_offset"], rows[0]["latency_ms"], rows[0]["sink_ms"], rows[0]["visible_ms"]) == (0, 30, 15, 10)


def test_no_trace_gives_no_tail_trace():
    acked, seen = [_sent(0, 0, 1)], [_seen(0, 0, 30)]
    assert tail_trace(acked, seen, pl.DataFrame(schema=TRACE_SCHEMA), replicated=1) is None
    assert tail_trace(acked, seen, _traces([(7, 1, 2)]), replicated=1) is None  # another position only


def test_trace_files_are_read_from_every_folder_and_a_torn_last_line_is_skipped(tmp_path):
    header = "topic,partition,offset,sent_ms,acked_ms\n"
    (tmp_path / "a" / "metrics" / "east-west").mkdir(parents=True)
    (tmp_path / "a" / "metrics" / "east-west" / "trace-1.csv").write_text(header + "t,0,0,5,9\nt,0,1,6,1")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "trace-2.csv").write_text(header + "t,1,0,7,8\n")
    frame = read_traces(tmp_path)
    assert sorted(frame.rows()) == [("t", 0, 0, 5, 9), ("t", 1, 0, 7, 8)]
    assert read_traces(tmp_path / "b" / "none").is_empty()
    assert set(STEPS) == {"source_ms", "read_ms", "sink_ms", "visible_ms"}
