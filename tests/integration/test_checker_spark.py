"""The Spark checker agrees with the reference, on real local Spark, over real files."""

from __future__ import annotations

import random

import pytest

from mirrordrill.harness.drill.checker import check_failover, check_flow
from mirrordrill.harness.drill.checker import spark as spark_checker
from mirrordrill.harness.drill.checker.contract import PERCENTILES, CheckerInputError, FailoverInput, FlowInput
from mirrordrill.harness.drill.checker.figures import nearest_rank
from mirrordrill.harness.drill.checker.spark_io import load_history as spark_load_history
from mirrordrill.harness.drill.checker.synthetic import COUNTS, FaultPlan, synthesize_failover, synthesize_flow
from mirrordrill.loadgen.histories.kinds import (
    ACKED_SENDS,
    END_OFFSETS,
    PROCESSED_RECORDS,
    TARGET_RECORDS,
    TIMELINE_EVENTS,
    UNCERTAIN_SENDS,
    history_files,
    history_path,
)
from mirrordrill.loadgen.histories.reader import load_history, read_rows
from mirrordrill.loadgen.histories.records import (
    AckedSend,
    LagSample,
    ProcessedRecord,
    TargetRecord,
    TimelineEvent,
    UncertainSend,
)
from mirrordrill.loadgen.histories.writer import HistoryWriter

try:  # the fixture module sits beside this file; tests/ may or may not be a package
    from tests.integration.spark_fixtures import spark  # noqa: F401  (a pytest fixture)
except ImportError:  # pragma: no cover
    from spark_fixtures import spark  # noqa: F401  (a pytest fixture)

pytestmark = pytest.mark.integration

EVERY_FAULT = FaultPlan(lost=7, duplicated=6, max_extra_copies=3, swapped_pairs=5,
                        misplaced=4, bad_reads=3, checksum_mismatches=2, source_duplicates=3,
                        phantoms=4, uncertain_delivered=3, uncertain_undelivered=2, rereads=9)
FLOWS = [
    dict(records=0, seed=1),
    dict(records=1, seed=2, faults=FaultPlan(lost=1)),
    dict(records=400, seed=3, producers=3, topics=2, partitions=3, faults=EVERY_FAULT),
    dict(records=2500, seed=4, producers=5, topics=3, partitions=4, faults=EVERY_FAULT),
    dict(records=300, seed=5, producers=1, topics=1, partitions=1,
         faults=FaultPlan(swapped_pairs=40, duplicated=10, rereads=30)),
]


def _write(tmp_path, kind, rows, files=1, torn_tail: bytes | None = None):
    """Rows of one kind over several writer files; optionally tear the last file."""
    paths = [history_path(tmp_path, kind, f"w{n}") for n in range(files)]
    writers = [HistoryWriter(kind, p) for p in paths]
    for n, row in enumerate(rows):
        writers[n % files].write(row)
    for w in writers:
        w.close()
    if torn_tail is not None:
        with open(paths[-1], "ab") as f:
            f.write(torn_tail)
    return paths


def _python_flow(directory, flow: FlowInput) -> FlowInput:
    def rows(kind):
        return load_history(kind, history_files(directory, kind)).rows
    return FlowInput(flow.source, flow.target, flow.topic_map, rows(ACKED_SENDS),
                     rows(TARGET_RECORDS), rows(UNCERTAIN_SENDS), rows(END_OFFSETS),
                     flow.timeline)


@pytest.mark.parametrize("params", FLOWS, ids=lambda p: f"{p['records']}-records-seed{p['seed']}")
def test_spark_and_reference_agree_on_flows(spark, tmp_path, params):
    synthetic = synthesize_flow(**params)
    flow = synthetic.flow
    # The ledger is torn by a crashed producer: a tail that would even parse as a record.
    _write(tmp_path, ACKED_SENDS, flow.acked, files=3,
           torn_tail=b"A,t0,0,99999,p0,99999,1,2,3,12")
    _write(tmp_path, TARGET_RECORDS, flow.observed, files=2, torn_tail=b"B,A.t0,0,1")
    _write(tmp_path, UNCERTAIN_SENDS, flow.uncertain)
    _write(tmp_path, END_OFFSETS, flow.lag_samples, files=2)

    reference = check_flow(_python_flow(tmp_path, flow))
    assert reference == check_flow(flow)  # the files changed nothing
    for name in COUNTS:
        assert getattr(reference, name) == synthetic.expected.total(name), name

    inp = spark_checker.load_flow_input(spark, tmp_path, flow.source, flow.target,
                                        flow.topic_map, flow.timeline)
    on_spark = spark_checker.check_flow(inp)
    for name in reference.__dataclass_fields__:  # name the field first when they differ
        assert getattr(on_spark, name) == getattr(reference, name), name
    assert on_spark == reference


FAILOVERS = [
    dict(records_per_partition=0, seed=1),
    dict(records_per_partition=60, seed=2, partitions=3, shift=-4, dr_local=12,
         dr_local_skipped=3, rebalance_repeats=5),
    dict(records_per_partition=80, seed=3, partitions=2, shift=6, dr_local=0),
]


@pytest.mark.parametrize("params", FAILOVERS, ids=lambda p: f"seed{p['seed']}")
def test_spark_and_reference_agree_on_failovers(spark, tmp_path, params):
    synthetic = synthesize_failover(**params)
    fo = synthetic.failover
    _write(tmp_path, ACKED_SENDS, fo.acked, files=2)
    _write(tmp_path, TARGET_RECORDS, fo.observed)
    _write(tmp_path, PROCESSED_RECORDS, fo.processed, files=2, torn_tail=b"billing,B")

    processed = read_rows(PROCESSED_RECORDS, history_files(tmp_path, PROCESSED_RECORDS))
    reference = check_failover(FailoverInput(
        fo.group, fo.strategy, fo.primary, fo.dr, fo.failure_ts_ms, fo.topic_map, processed,
        read_rows(ACKED_SENDS, history_files(tmp_path, ACKED_SENDS)),
        read_rows(TARGET_RECORDS, history_files(tmp_path, TARGET_RECORDS)), fo.dr_topics))
    assert {k: getattr(reference, k) for k in synthetic.expected} == synthetic.expected

    inp = spark_checker.load_failover_input(spark, tmp_path, fo.group, fo.strategy,
                                            fo.primary, fo.dr, fo.failure_ts_ms,
                                            fo.topic_map, fo.dr_topics)
    assert spark_checker.check_failover(inp) == reference


def test_percentile_disc_is_nearest_rank(spark):
    """The checker relies on Spark's percentile_disc being the value at rank ceil(q*n)."""
    rng = random.Random(7)
    groups = {n: [rng.randrange(0, 50) for _ in range(n)]
              for n in list(range(1, 130)) + [199, 200, 201, 999, 1000, 1001, 4321]}
    frame = spark.createDataFrame([(n, v) for n, vs in groups.items() for v in vs],
                                  "n INT, v LONG")
    exprs = [f"percentile_disc({pct / 100!r}) WITHIN GROUP (ORDER BY v) AS {name}"
             for name, pct in PERCENTILES]
    rows = frame.groupBy("n").agg(*[__import__("pyspark.sql.functions", fromlist=["expr"])
                                    .expr(e) for e in exprs]).collect()
    assert len(rows) == len(groups)
    for r in rows:
        ordered = sorted(groups[r["n"]])
        for name, pct in PERCENTILES:
            assert r[name] == nearest_rank(ordered, pct), (r["n"], name)


def test_legacy_percentile_setting_is_refused(spark):
    flow = synthesize_flow(10, seed=1).flow
    frame = spark.createDataFrame([], ACKED_SENDS.spark_schema())
    inp = spark_checker.SparkFlowInput(flow.source, flow.target, flow.topic_map, frame,
                                       spark.createDataFrame([], TARGET_RECORDS.spark_schema()))
    spark.conf.set("spark.sql.legacy.percentileDiscCalculation", "true")
    try:
        with pytest.raises(CheckerInputError, match="percentileDisc"):
            spark_checker.check_flow(inp)
    finally:
        spark.conf.unset("spark.sql.legacy.percentileDiscCalculation")


KIND_ROWS = {
    ACKED_SENDS: [AckedSend('dc "east", 1', "t", 0, 41, "p,1", 7, 1000, 1003, 120,
                                4294967295)],
    UNCERTAIN_SENDS: [UncertainSend("A", "t", "p", 8, 1004, 'said "no",\ntwice')],
    TARGET_RECORDS: [TargetRecord("B", "A.t", 0, 12, "p", 7, 1100, True, 1),
                       TargetRecord("B", "A.t", 0, 13, "p", 7, 1101, False, 2)],
    PROCESSED_RECORDS: [ProcessedRecord("g", "B", "A.t", 0, 12, "p", 7, 1200)],
    END_OFFSETS: [LagSample(1000, "A", "t", 0, 42)],
    TIMELINE_EVENTS: [TimelineEvent("kill", "kill", 1, 2, "ok", 'pid 1, "9"'),
                        TimelineEvent("failover", "failover", 3, None, "running", "x")],
}


@pytest.mark.parametrize("kind", list(KIND_ROWS), ids=lambda k: k.name)
def test_spark_reads_history_files_like_python(spark, tmp_path, kind):
    rows = KIND_ROWS[kind] * 3
    clean = _write(tmp_path / "clean", kind, rows, files=2)
    torn = _write(tmp_path / "torn", kind, rows, files=2, torn_tail=b"x,1,2")
    for paths in (clean, clean + torn):
        python = load_history(kind, paths)
        loaded = spark_load_history(spark, kind, paths)
        got = [kind.row_type(*r) for r in loaded.frame.collect()]
        assert sorted(got, key=repr) == sorted(python.rows, key=repr)
        assert loaded.torn == python.torn
    assert spark_load_history(spark, kind, []).frame.count() == 0


def test_spark_and_reference_agree_after_a_wipe(spark, tmp_path):
    """A failback wipes a cluster: its offsets restart at 0 (not reordering), and what it held
    before is not owed to a group that switches back onto it."""
    t0, wiped = 1_700_000_000_000, 1_700_000_030_000
    acked = [AckedSend("A", "t", 0, i, "p", i, t0 + i, t0 + i, 100, i) for i in range(3)]
    acked += [AckedSend("A", "t", 0, i, "q", i, wiped + 5000 + i, wiped + 5000 + i, 100, i) for i in range(2)]
    observed = [TargetRecord("B", "A.t", 0, i, "p", i, t0 + 50, True, i) for i in range(3)]
    observed += [TargetRecord("B", "A.t", 0, 3 + i, "q", i, wiped + 6000, True, i) for i in range(2)]
    timeline = [TimelineEvent("wipe A", "wipe", wiped, wiped + 4000, "ok", "")]
    _write(tmp_path, ACKED_SENDS, acked)
    _write(tmp_path, TARGET_RECORDS, observed)
    flow = FlowInput("A", "B", {"A.t": "t"}, acked, observed, timeline=timeline)
    reference = check_flow(flow)
    assert (reference.replicated, reference.reordered) == (5, 0)
    on_spark = spark_checker.check_flow(spark_checker.load_flow_input(spark, tmp_path, "A", "B", {"A.t": "t"},
                                                                      timeline))
    assert on_spark == reference

    # a switch back from B onto the rebuilt A: p's records were on A before the wipe
    processed = [ProcessedRecord("g", "A", "t", 0, i, "q", i, wiped + 9000) for i in range(2)]
    _write(tmp_path, PROCESSED_RECORDS, processed)
    fo = dict(group="g", strategy="translated", primary="B", dr="A", failure_ts_ms=wiped + 8000,
              topic_map={"B.t": "t"}, dr_topics=("t",), dr_since_ms=wiped)
    reference = check_failover(FailoverInput(processed=processed, acked=acked, observed=[], **fo))
    assert (reference.available, reference.skipped) == (2, 0)
    on_spark = spark_checker.check_failover(spark_checker.load_failover_input(spark, tmp_path, **fo))
    assert on_spark == reference


@pytest.mark.parametrize("params", FLOWS[2:4], ids=lambda p: f"{p['records']}-records-seed{p['seed']}")
def test_spark_and_reference_agree_when_replication_had_not_drained(spark, tmp_path, params):
    """An interrupted drill: unseen ids above the last seen one of their partition are in
    flight, not lost, on both checkers alike."""
    synthetic = synthesize_flow(**params)
    flow = synthetic.flow
    _write(tmp_path, ACKED_SENDS, flow.acked, files=2)
    _write(tmp_path, TARGET_RECORDS, flow.observed)
    _write(tmp_path, UNCERTAIN_SENDS, flow.uncertain)
    _write(tmp_path, END_OFFSETS, flow.lag_samples)
    undrained = FlowInput(flow.source, flow.target, flow.topic_map, flow.acked, flow.observed,
                          flow.uncertain, flow.lag_samples, flow.timeline, drained=False)
    reference = check_flow(undrained)
    assert reference.lost + reference.in_flight == synthetic.expected.total("lost")
    on_spark = spark_checker.check_flow(spark_checker.load_flow_input(
        spark, tmp_path, flow.source, flow.target, flow.topic_map, flow.timeline, drained=False))
    for name in reference.__dataclass_fields__:
        assert getattr(on_spark, name) == getattr(reference, name), name


def test_spark_in_flight_is_only_above_the_last_seen_record(spark, tmp_path):
    """Offsets 0-4 acked, 0, 1 and 3 seen: 2 was skipped (lost), 4 may still arrive."""
    t0 = 1_700_000_000_000
    acked = [AckedSend("A", "t", 0, i, "p", i, t0 + i, t0 + i, 100, i) for i in range(5)]
    observed = [TargetRecord("B", "A.t", 0, n, "p", i, t0 + 50, True, i) for n, i in enumerate((0, 1, 3))]
    _write(tmp_path, ACKED_SENDS, acked)
    _write(tmp_path, TARGET_RECORDS, observed)
    inp = spark_checker.load_flow_input(spark, tmp_path, "A", "B", {"A.t": "t"}, drained=False)
    result = spark_checker.check_flow(inp)
    assert (result.lost, result.in_flight) == (1, 1)
    assert (result.samples.lost, result.samples.in_flight) == ((("p", 2),), (("p", 4),))
    drained = spark_checker.check_flow(spark_checker.load_flow_input(spark, tmp_path, "A", "B",
                                                                     {"A.t": "t"}, drained=True))
    assert (drained.lost, drained.in_flight) == (2, 0)


def _stall_history(seed: int) -> tuple[list[AckedSend], list[TargetRecord], list[LagSample]]:
    """Three partitions copied with random delays, stops and lost records; some copies seen before
    their ack, some first sightings shared by several records (ties on both sides)."""
    rng, t0 = random.Random(seed), 1_700_000_000_000
    acked, observed, samples = [], [], []
    for p in range(3):
        stop_at, stop_ms = rng.randrange(20, 80), rng.choice((0, 700, 3_000))
        for i in range(100):
            ack = t0 + 10 * i + rng.randrange(0, 4)
            acked.append(AckedSend("A", "t", p, i, f"p{p}", i, ack - 1, ack, 100, i))
            if rng.random() < 0.03:
                continue  # lost
            seen = ack + rng.choice((-2, 0, 5, 20)) + (stop_ms if i >= stop_at else 0)
            observed.append(TargetRecord("B", "A.t", p, i, f"p{p}", i, seen, True, i))
            if rng.random() < 0.05:  # a duplicate read much later: not an arrival
                observed.append(TargetRecord("B", "A.t", p, 1000 + i, f"p{p}", i, seen + 9_000, True, i))
        samples.append(LagSample(t0 + 12_000 + p, "A", "t", p, 100))
    return acked, observed, samples


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_spark_and_reference_agree_on_the_stall(spark, tmp_path, seed):
    acked, observed, samples = _stall_history(seed)
    _write(tmp_path, ACKED_SENDS, acked, files=2)
    _write(tmp_path, TARGET_RECORDS, observed)
    _write(tmp_path, END_OFFSETS, samples)
    t0 = acked[0].ack_ts_ms - acked[0].ack_ts_ms % 10
    # an instant step, a step that lasted, one that never ended, and one after everything
    timeline = (TimelineEvent("kill", "kill_replicator", t0 + 400, t0 + 400, "ok", ""),
                TimelineEvent("pause", "pause_replicator", t0 + 600, t0 + 900, "ok", ""),
                TimelineEvent("cut", "cut_link", t0 + 200, None, "ok", ""),
                TimelineEvent("late", "sleep", t0 + 60_000, t0 + 61_000, "ok", ""))
    reference = check_flow(FlowInput("A", "B", {"A.t": "t"}, acked, observed, lag_samples=samples,
                                     timeline=timeline))
    assert reference.stall.stall_s and reference.stall.stall_s > 0.5
    assert len(reference.stall.by_partition) == 3
    assert reference.events[2].stall_s == reference.stall.stall_s and reference.events[3].stall_s == 0
    on_spark = spark_checker.check_flow(spark_checker.load_flow_input(spark, tmp_path, "A", "B", {"A.t": "t"},
                                                                      timeline))
    assert on_spark.stall == reference.stall
    assert on_spark.events == reference.events
