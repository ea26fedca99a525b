"""The reference checker on small hand-written histories: every count, by hand."""

from __future__ import annotations

import pytest

from mirrordrill.harness.drill.checker import (
    CheckerInputError,
    FailoverInput,
    FlowInput,
    LatencyStats,
    SecondSeries,
    check_failover,
    check_flow,
)
from mirrordrill.harness.drill.checker.figures import latency_stats, nearest_rank, throughput
from mirrordrill.harness.drill.checker.spark import SparkFailoverInput, SparkFlowInput
from mirrordrill.loadgen.histories.records import (
    AckedSend,
    LagSample,
    ProcessedRecord,
    TargetRecord,
    TimelineEvent,
    UncertainSend,
)

T0 = 1_700_000_000_000  # an epoch second boundary
MAP = {"A.t": "t"}


def ack(pid, seq, partition=0, offset=None, send=T0, acked=None, topic="t", cluster="A",
        size=100, checksum=None):
    return AckedSend(cluster, topic, partition, seq if offset is None else offset, pid, seq,
                     send, send + 1 if acked is None else acked, size,
                     seq + 1000 if checksum is None else checksum)


def seen(pid, seq, partition=0, offset=None, ts=T0 + 10, topic="A.t", ok=True,
         checksum=None, cluster="B"):
    return TargetRecord(cluster, topic, partition, seq if offset is None else offset, pid,
                        seq, ts, ok, seq + 1000 if checksum is None else checksum)


def flow(acked, observed, uncertain=(), topic_map=MAP, **kw):
    return check_flow(FlowInput("A", "B", topic_map, acked, observed, uncertain, **kw))


def counts(r):
    return {k: getattr(r, k) for k in ("acked", "replicated", "lost", "duplicates",
                                       "reordered", "misplaced", "corrupted", "unexpected",
                                       "uncertain_delivered", "source_duplicates")}


ZERO = dict(acked=0, replicated=0, lost=0, duplicates=0, reordered=0, misplaced=0,
            corrupted=0, unexpected=0, uncertain_delivered=0, source_duplicates=0)


def expect(**kw):
    return {**ZERO, **kw}


# --------------------------------------------------------------------------- counts


def test_clean_replication():
    acked = [ack("p", i) for i in range(3)]
    r = flow(acked, [seen("p", i) for i in range(3)])
    assert counts(r) == expect(acked=3, replicated=3)
    assert r.samples.lost == ()


def test_nothing_at_all():
    r = flow([], [])
    assert counts(r) == ZERO
    assert r.latency_ms == LatencyStats(0, None, None, None, None)
    assert r.throughput_records_s is None and r.throughput_mb_s is None
    assert r.series.lag == SecondSeries(0, ())


def test_lost():
    r = flow([ack("p", i) for i in range(4)], [seen("p", 0), seen("p", 3)])
    assert counts(r) == expect(acked=4, replicated=2, lost=2)
    assert r.samples.lost == (("p", 1), ("p", 2))


def test_duplicate_at_a_new_offset():
    r = flow([ack("p", 0), ack("p", 1)],
             [seen("p", 0, offset=0), seen("p", 1, offset=1), seen("p", 0, offset=2),
              seen("p", 0, offset=3)])
    assert counts(r) == expect(acked=2, replicated=2, duplicates=2)
    assert r.samples.duplicates == (("p", 0),)


def test_reading_the_same_position_twice_is_not_a_duplicate():
    r = flow([ack("p", 0)], [seen("p", 0, ts=T0 + 10), seen("p", 0, ts=T0 + 99)])
    assert counts(r) == expect(acked=1, replicated=1)
    assert r.latency_ms.max == 10  # the first read counts


def test_a_swap_is_one_reordering_not_a_loss_and_a_duplicate():
    # Xinfra Monitor would see offset 2 where 1 was expected: "lost 1, duplicate 2".
    acked = [ack("p", i, offset=i) for i in range(4)]
    observed = [seen("p", 0, offset=100), seen("p", 1, offset=102), seen("p", 2, offset=101),
                seen("p", 3, offset=103)]
    r = flow(acked, observed)
    assert counts(r) == expect(acked=4, replicated=4, reordered=1)
    assert r.samples.reordered == (("p", 2),)


def test_reordering_is_per_source_partition_and_follows_source_offsets():
    # Partition 0 is in order; partition 1 arrives backwards; ids interleave producers.
    acked = [ack("a", 0, partition=0, offset=10), ack("b", 0, partition=0, offset=11),
             ack("a", 1, partition=1, offset=5), ack("b", 1, partition=1, offset=6),
             ack("a", 2, partition=1, offset=7)]
    observed = [seen("a", 0, partition=0, offset=0), seen("b", 0, partition=0, offset=1),
                seen("a", 1, partition=1, offset=2), seen("b", 1, partition=1, offset=1),
                seen("a", 2, partition=1, offset=0)]
    r = flow(acked, observed)
    assert r.reordered == 2
    assert r.samples.reordered == (("a", 2), ("b", 1))


def test_a_record_landing_far_ahead_reorders_only_those_it_jumped():
    acked = [ack("p", i, offset=i) for i in range(5)]
    observed = [seen("p", 0, offset=0), seen("p", 1, offset=4), seen("p", 2, offset=1),
                seen("p", 3, offset=2), seen("p", 4, offset=3)]
    r = flow(acked, observed)
    assert r.reordered == 3
    assert r.lost == 0 and r.duplicates == 0


def test_duplicate_copies_do_not_reorder():
    acked = [ack("p", i, offset=i) for i in range(3)]
    observed = [seen("p", 0, offset=0, ts=T0 + 5), seen("p", 1, offset=1, ts=T0 + 6),
                seen("p", 2, offset=2, ts=T0 + 7), seen("p", 0, offset=3, ts=T0 + 8)]
    r = flow(acked, observed)
    assert counts(r) == expect(acked=3, replicated=3, duplicates=1)


def test_misplaced_into_another_partition():
    acked = [ack("p", 0, partition=0), ack("p", 1, partition=1)]
    observed = [seen("p", 0, partition=0), seen("p", 1, partition=0, offset=9)]
    r = flow(acked, observed)
    assert counts(r) == expect(acked=2, replicated=2, misplaced=1)
    assert r.samples.misplaced == (("p", 1),)


def test_misplaced_into_another_topic():
    topic_map = {"A.t": "t", "A.u": "u"}
    r = flow([ack("p", 0, topic="t")], [seen("p", 0, topic="A.u")], topic_map=topic_map)
    assert counts(r) == expect(acked=1, replicated=1, misplaced=1)
    assert r.by_topic["t"].misplaced == 1 and r.by_topic["u"].acked == 0


@pytest.mark.parametrize("observed", [
    [seen("p", 0, ok=False)],                             # payload does not match envelope
    [seen("p", 0, checksum=5)],                           # envelope does not match ledger
    [seen("p", 0), seen("p", 0, offset=7, ok=False)],     # only a duplicate copy is bad
    [seen("p", 0, ok=False), seen("p", 0, checksum=5)],   # both: still one id
])
def test_corrupted(observed):
    r = flow([ack("p", 0)], observed)
    assert r.corrupted == 1
    assert r.replicated == 1 and r.lost == 0
    assert r.samples.corrupted == (("p", 0),)


def test_unexpected_and_uncertain_delivered():
    uncertain = [UncertainSend("A", "t", "p", 5, T0, "Local: Message timed out"),
                 UncertainSend("A", "t", "p", 6, T0, "never delivered")]
    observed = [seen("p", 0), seen("p", 5), seen("ghost", 1), seen("ghost", 1, offset=4)]
    r = flow([ack("p", 0)], observed, uncertain)
    assert counts(r) == expect(acked=1, replicated=1, unexpected=1, uncertain_delivered=1,
                               duplicates=1)
    assert r.samples.unexpected == (("ghost", 1),)
    assert r.samples.uncertain_delivered == (("p", 5),)


def test_an_acked_retry_of_an_uncertain_send_is_just_replicated():
    uncertain = [UncertainSend("A", "t", "p", 0, T0, "timed out")]
    r = flow([ack("p", 0)], [seen("p", 0)], uncertain)
    assert counts(r) == expect(acked=1, replicated=1)


def test_an_id_acked_twice_on_the_source():
    acked = [ack("p", 0, offset=0, acked=T0 + 1), ack("p", 0, offset=1, acked=T0 + 50)]
    observed = [seen("p", 0, offset=0, ts=T0 + 5), seen("p", 0, offset=1, ts=T0 + 60)]
    r = flow(acked, observed)
    assert counts(r) == expect(acked=1, replicated=1, source_duplicates=1, duplicates=1)
    assert r.latency_ms.max == 5  # measured from the first ack's send


def test_other_clusters_and_topics_are_ignored():
    acked = [ack("p", 0), ack("p", 1, cluster="C"), ack("p", 2, topic="other")]
    observed = [seen("p", 0), seen("x", 1, cluster="C"), seen("x", 2, topic="A.other"),
                seen("p", 1, cluster="A", topic="A.t")]
    uncertain = [UncertainSend("C", "t", "x", 1, T0, "")]
    r = flow(acked, observed, uncertain)
    assert counts(r) == expect(acked=1, replicated=1)


def test_each_id_counts_in_one_topic_and_topics_add_up():
    # The phantom g/0 is first seen in A.u, so it belongs to u, with both its copies.
    topic_map = {"A.t": "t", "A.u": "u"}
    acked = [ack("p", 0, topic="t"), ack("p", 1, topic="u"), ack("p", 2, topic="u")]
    observed = [seen("p", 0, topic="A.t"), seen("p", 1, topic="A.u"),
                seen("g", 0, topic="A.u", ts=T0 + 5), seen("g", 0, topic="A.t", offset=5)]
    r = flow(acked, observed, topic_map=topic_map)
    assert r.topics == ("t", "u")
    assert counts(r.by_topic["t"]) == expect(acked=1, replicated=1)
    assert counts(r.by_topic["u"]) == expect(acked=2, replicated=1, lost=1, unexpected=1,
                                             duplicates=1)
    assert r.by_topic["u"].remote_topics == ("A.u",)
    for name, total in counts(r).items():
        assert total == sum(getattr(t, name) for t in r.by_topic.values())


def test_samples_are_the_first_twenty_ids_in_id_order():
    acked = [ack("p", i) for i in range(30)] + [ack("a", i) for i in range(5)]
    r = flow(acked, [])
    assert r.lost == 35
    assert r.samples.lost == tuple([("a", i) for i in range(5)] + [("p", i) for i in range(15)])


# --------------------------------------------------------------------------- latency


def test_nearest_rank_percentiles():
    assert nearest_rank([1, 2, 3, 4], 50) == 2
    assert nearest_rank([1, 2, 3, 4], 60) == 3   # rank ceil(2.4) = 3
    assert nearest_rank(list(range(1, 11)), 99) == 10
    assert nearest_rank(list(range(1, 101)), 99) == 99
    assert nearest_rank([7], 1) == 7
    assert latency_stats([5, 1, 9]) == LatencyStats(3, 5, 9, 9, 9)
    with pytest.raises(ValueError):
        nearest_rank([], 50)


def test_latency_is_first_sighting_minus_send():
    acked = [ack("p", i, send=T0 + 100 * i) for i in range(10)]
    observed = [seen("p", i, ts=T0 + 100 * i + (i + 1)) for i in range(10)]
    r = flow(acked, observed)
    assert r.latency_ms == LatencyStats(10, 5, 9, 10, 10)


def test_throughput_definition():
    # 2 replicated records, 300 bytes, first send at T0, last first sighting at T0 + 500.
    acked = [ack("p", 0, send=T0, size=100), ack("p", 1, send=T0 + 100, size=200),
             ack("p", 2, send=T0 + 200, size=5000)]
    observed = [seen("p", 0, ts=T0 + 400), seen("p", 1, ts=T0 + 500), seen("p", 1, ts=T0 + 900)]
    r = flow(acked, observed)
    assert (r.first_send_ts_ms, r.last_first_seen_ts_ms) == (T0, T0 + 500)
    assert r.replicated_bytes == 300
    assert r.throughput_records_s == pytest.approx(4.0)
    assert r.throughput_mb_s == pytest.approx(300 / 0.5 / 1e6)
    assert throughput(1, 10, T0, T0) == (None, None)


# --------------------------------------------------------------------------- series


def test_exact_series():
    acked = [ack("p", 0, partition=0, send=T0, acked=T0 + 10),
             ack("p", 1, partition=0, send=T0 + 500, acked=T0 + 1500),   # seen before acked
             ack("p", 2, partition=1, send=T0 + 1000, acked=T0 + 1001),
             ack("p", 3, partition=1, send=T0 + 2000, acked=T0 + 2001)]  # lost
    observed = [seen("p", 0, partition=0, ts=T0 + 2500),
                seen("p", 1, partition=0, ts=T0 + 900),
                seen("p", 2, partition=1, ts=T0 + 1200)]
    r = flow(acked, observed)
    s, first = r.series, T0 // 1000
    assert s.produced == SecondSeries(first, (1, 2, 1))
    assert s.replicated == SecondSeries(first, (1, 1, 1))
    # Second 0: p0 acked, not seen -> 1 (p1 seen but not yet acked: no negative lag).
    # Second 1: p1 and p2 acked and seen -> still only p0 -> 1. Second 2: p3 lost -> 1.
    assert s.lag == SecondSeries(first, (1, 1, 1))
    assert s.lag_by_partition == {("t", 0): SecondSeries(first, (1, 1, 0)),
                                  ("t", 1): SecondSeries(first, (0, 0, 1))}
    assert s.lag.at(first + 2) == 1 and s.lag.at(first + 3) is None
    assert s.lag.end_s == first + 2


def test_offset_lag_from_samples():
    second = T0 // 1000
    samples = [LagSample(T0 + 100, "A", "t", 0, 10), LagSample(T0 + 900, "A", "t", 0, 12),
               LagSample(T0 + 500, "B", "A.t", 0, 4),
               LagSample(T0 + 1100, "A", "t", 0, 20),           # target missing in second 1
               LagSample(T0 + 2100, "A", "t", 0, 30), LagSample(T0 + 2200, "B", "A.t", 0, 29),
               LagSample(T0 + 100, "A", "t", 1, 5), LagSample(T0 + 200, "B", "A.t", 1, 5),
               LagSample(T0 + 100, "C", "t", 0, 99), LagSample(T0 + 100, "B", "x", 0, 99)]
    r = flow([ack("p", 0)], [seen("p", 0)], lag_samples=samples)
    s = r.series
    assert s.offset_lag_by_partition == {
        ("t", "A.t", 0): SecondSeries(second, (8, None, 1)),
        ("t", "A.t", 1): SecondSeries(second, (0, None, None))}
    assert s.offset_lag == SecondSeries(second, (8, None, None))


def test_event_impact():
    acked = [ack("p", i, send=T0 + 1000 * i, acked=T0 + 1000 * i + 1) for i in range(5)]
    observed = [seen("p", i, ts=T0 + 1000 * i + 500) for i in (0, 1, 3)]
    timeline = [TimelineEvent("kill", "kill", T0 + 1001, T0 + 3001, "ok", ""),
                TimelineEvent("pause", "pause", T0 + 3500, None, "running", "")]
    r = flow(acked, observed, timeline=timeline)
    kill, pause = r.events
    assert (kill.acked, kill.lost, kill.max_lag) == (3, 1, 1)
    assert (pause.acked, pause.lost, pause.max_lag) == (1, 1, 2)


# --------------------------------------------------------------------------- input and output


def test_ambiguous_inputs_are_refused():
    with pytest.raises(CheckerInputError):
        FlowInput("A", "A", MAP, [], [])
    with pytest.raises(CheckerInputError):
        FlowInput("A", "B", {}, [], [])


def _failover(cls, primary, dr, topic_map):
    return cls("g", "offsets", primary, dr, T0, topic_map, [], [], [])


@pytest.mark.parametrize("cls", [FailoverInput, SparkFailoverInput])
def test_ambiguous_failover_inputs_are_refused(cls):
    # the list and the Spark inputs share one validation: neither may fail a group over to itself
    with pytest.raises(CheckerInputError, match="same cluster"):
        _failover(cls, "A", "A", MAP)
    with pytest.raises(CheckerInputError, match="topic_map is empty"):
        _failover(cls, "A", "B", {})
    assert _failover(cls, "A", "B", MAP).topic_map == MAP


def test_ambiguous_spark_flow_inputs_are_refused():
    with pytest.raises(CheckerInputError, match="same cluster"):
        SparkFlowInput("A", "A", MAP, [], [])
    with pytest.raises(CheckerInputError, match="topic_map is empty"):
        SparkFlowInput("A", "B", {}, [], [])


def test_summary_keeps_the_contract_names():
    r = flow([ack("p", 0), ack("p", 1)], [seen("p", 0)])
    s = r.summary()
    for key in ("source", "target", "topics", "acked", "replicated", "lost", "duplicates",
                "reordered", "corrupted", "unexpected", "latency_ms", "throughput_records_s",
                "throughput_mb_s"):
        assert key in s
    assert s["latency_ms"] == {"p50": 10, "p90": 10, "p99": 10, "max": 10}
    assert s["samples"]["lost"] == [["p", 1]]
    import json
    json.dumps(s)


# --------------------------------------------------------------------------- failover

F = T0 + 10_000  # the failure


def processed(pid, seq, cluster, ts, group="g"):
    return ProcessedRecord(group, cluster, "A.t" if cluster == "B" else "t", 0, seq, pid,
                           seq, ts)


def failover(acked, observed, proc, dr_topics=()):
    return check_failover(FailoverInput("g", "checkpoints", "A", "B", F, MAP, proc, acked,
                                        observed, dr_topics))


def test_failover_figures():
    # 0..5 acked on A; 0..3 replicated to B; the group processed 0..2 on A, then resumed on
    # B at 2 (reprocessing 2) and went on to 3. Ids 4 and 5 never reached B: RPO, not skip.
    acked = [ack("p", i, acked=T0 + 1000 * i) for i in range(6)]
    observed = [seen("p", i) for i in range(4)]
    proc = [processed("p", i, "A", T0 + 1000 * i + 5) for i in range(3)]
    proc += [processed("p", 2, "B", F + 2500), processed("p", 3, "B", F + 2600)]
    r = failover(acked, observed, proc)
    assert (r.available, r.processed, r.skipped, r.reprocessed) == (4, 4, 0, 1)
    assert r.reprocessed_across_failover == 1
    assert r.rto_s == 2.5
    assert (r.rpo_records, r.rpo_window_s) == (2, 1.0)
    assert (r.rpo_first_ack_ts_ms, r.rpo_last_ack_ts_ms) == (T0 + 4000, T0 + 5000)
    assert r.rpo_sample == (("p", 4), ("p", 5))


def test_failover_skips_and_dr_local_records():
    # Resumed on B past id 1 (skipped); producers moved to B, the group missed one there.
    acked = [ack("p", i) for i in range(3)]
    acked += [ack("q", i, cluster="B", acked=F + 10 + i) for i in range(3)]
    observed = [seen("p", i) for i in range(3)]
    proc = [processed("p", 0, "A", F - 1), processed("p", 2, "B", F + 100),
            processed("q", 1, "B", F + 200), processed("q", 2, "B", F + 300),
            processed("p", 0, "A", F + 50, group="other")]
    r = failover(acked, observed, proc, dr_topics=("t",))
    assert (r.available, r.processed, r.skipped, r.reprocessed) == (6, 4, 2, 0)
    assert r.skipped_sample == (("p", 1), ("q", 0))
    assert r.rto_s == 0.1
    assert (r.rpo_records, r.rpo_window_s) == (0, None)


def test_failover_before_failure_is_strict_and_no_dr_processing_means_no_rto():
    acked = [ack("p", 0, acked=F - 1), ack("p", 1, acked=F)]
    proc = [processed("p", 0, "A", F), processed("p", 0, "A", F + 1)]
    r = failover(acked, [], proc)
    # Processed at the failure instant is not "before": nothing is available.
    assert (r.available, r.skipped, r.reprocessed) == (0, 0, 1)
    assert r.rto_s is None
    assert (r.rpo_records, r.rpo_window_s) == (1, 0.0)  # acked at F is not before F
    assert r.summary()["rpo_sample"] == [["p", 0]]


# --------------------------------------------------------------------------- wiped clusters


def wipe(cluster, at):
    return TimelineEvent(f"wipe {cluster}", "wipe", at, at + 5000, "ok", "")


def test_offsets_restarting_after_a_wipe_of_the_source_are_not_reordering():
    # before the wipe: offsets 0..2 land at 0..2; after it the source restarts at offset 0
    # and those records land after the old ones, at 3..4
    acked = [ack("p", i, acked=T0 + i) for i in range(3)]
    acked += [ack("q", i, offset=i, acked=T0 + 60_000 + i) for i in range(2)]
    observed = [seen("p", i) for i in range(3)] + [seen("q", i, offset=3 + i) for i in range(2)]
    assert flow(acked, observed).reordered == 2  # without the wipe on the timeline: reordered
    r = flow(acked, observed, timeline=[wipe("A", T0 + 30_000)])
    assert counts(r) == expect(acked=5, replicated=5)
    # a wipe of another cluster changes nothing
    assert flow(acked, observed, timeline=[wipe("B", T0 + 30_000)]).reordered == 2


def test_reordering_within_one_incarnation_still_counts_after_a_wipe():
    acked = [ack("q", i, offset=i, acked=T0 + 60_000 + i) for i in range(2)]
    observed = [seen("q", 0, offset=1), seen("q", 1, offset=0)]
    assert flow(acked, observed, timeline=[wipe("A", T0 + 30_000)]).reordered == 1


def test_records_acked_on_dr_before_it_was_wiped_are_not_owed_to_the_group():
    # a switch back onto a rebuilt cluster B: id 0 was acked on B before the wipe and is gone
    acked = [ack("d", 0, topic="t", cluster="B", acked=F - 50_000),
             ack("d", 1, topic="t", cluster="B", acked=F + 1000)]
    proc = [ProcessedRecord("g", "B", "t", 0, 1, "d", 1, F + 2000)]  # B's own topic t
    kw = dict(processed=proc, acked=acked, observed=[], dr_topics=("t",))
    before = check_failover(FailoverInput("g", "translated", "A", "B", F, MAP, **kw))
    assert (before.available, before.skipped) == (2, 1)
    after = check_failover(FailoverInput("g", "translated", "A", "B", F, MAP, dr_since_ms=F - 10_000, **kw))
    assert (after.available, after.skipped) == (1, 0)
