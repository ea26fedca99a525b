"""Property tests: clean histories with known numbers of injected faults must come back
with exactly those counts: no false positive, no false negative."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mirrordrill.harness.drill.checker import check_failover, check_flow
from mirrordrill.harness.drill.checker.contract import SAMPLE_SIZE
from mirrordrill.harness.drill.checker.figures import latency_stats
from mirrordrill.harness.drill.checker.synthetic import COUNTS, SAMPLED, FaultPlan, synthesize_failover, synthesize_flow

SETTINGS = settings(max_examples=200, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

fault_plans = st.builds(
    FaultPlan,
    lost=st.integers(0, 6), duplicated=st.integers(0, 6), max_extra_copies=st.integers(1, 3),
    swapped_pairs=st.integers(0, 6), misplaced=st.integers(0, 4), bad_reads=st.integers(0, 3),
    checksum_mismatches=st.integers(0, 3), source_duplicates=st.integers(0, 3),
    phantoms=st.integers(0, 4), uncertain_delivered=st.integers(0, 4),
    uncertain_undelivered=st.integers(0, 3), rereads=st.integers(0, 6))


@st.composite
def flows(draw):
    return synthesize_flow(
        draw(st.integers(0, 120)), seed=draw(st.integers(0, 2**32 - 1)),
        producers=draw(st.integers(1, 4)), topics=draw(st.integers(1, 3)),
        partitions=draw(st.integers(1, 4)), faults=draw(fault_plans))


@SETTINGS
@given(flows())
def test_injected_faults_come_back_exactly(synthetic):
    result = check_flow(synthetic.flow)
    expected = synthetic.expected
    for topic, want in expected.by_topic.items():
        got = result.by_topic[topic]
        assert {k: getattr(got, k) for k in COUNTS} == want, topic
        assert got.latency_ms == latency_stats(expected.latencies[topic])
    for name in COUNTS:
        assert getattr(result, name) == expected.total(name), name
    all_latencies = [v for vs in expected.latencies.values() for v in vs]
    assert result.latency_ms == latency_stats(all_latencies)
    for name in SAMPLED:
        assert getattr(result.samples, name) == tuple(sorted(expected.ids[name])[:SAMPLE_SIZE])
    (event,) = result.events
    assert (event.acked, event.lost) == (expected.event_acked, expected.event_lost)


@SETTINGS
@given(flows())
def test_series_add_up(synthetic):
    result = check_flow(synthetic.flow)
    series = result.series
    assert sum(series.produced.values) == result.acked
    assert sum(series.replicated.values) == result.replicated
    if result.acked:
        assert series.lag.values[-1] == result.lost  # only lost records never catch up
        assert min(series.lag.values) >= 0
        assert [sum(v) for v in zip(*(s.values for s in series.lag_by_partition.values()), strict=True)] \
            == list(series.lag.values)


@SETTINGS
@given(st.integers(1, 150), st.integers(0, 2**32 - 1), st.integers(1, 20))
def test_pure_reordering_never_looks_like_loss_or_duplication(records, seed, pairs):
    synthetic = synthesize_flow(records, seed=seed, partitions=2,
                                faults=FaultPlan(swapped_pairs=pairs))
    result = check_flow(synthetic.flow)
    assert (result.lost, result.duplicates, result.unexpected) == (0, 0, 0)
    assert result.reordered == synthetic.expected.total("reordered")


@SETTINGS
@given(records=st.integers(0, 40), seed=st.integers(0, 2**32 - 1),
       partitions=st.integers(1, 4), shift=st.integers(-5, 5), dr_local=st.integers(0, 10),
       dr_local_skipped=st.integers(0, 4), repeats=st.integers(0, 5))
def test_failover_figures_come_back_exactly(records, seed, partitions, shift, dr_local,
                                            dr_local_skipped, repeats):
    synthetic = synthesize_failover(records, seed=seed, partitions=partitions, shift=shift,
                                    dr_local=dr_local, dr_local_skipped=dr_local_skipped,
                                    rebalance_repeats=repeats)
    result = check_failover(synthetic.failover)
    got = {k: getattr(result, k) for k in synthetic.expected}
    assert got == synthetic.expected
