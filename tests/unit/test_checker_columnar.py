"""The vectorised flow check agrees with the per-record computation it replaced (the oracle in
checker_oracle.py) on every figure, on random histories holding every kind of fault."""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mirrordrill.harness.drill.checker import check_flow
from mirrordrill.harness.drill.checker.columnar import as_columnar
from mirrordrill.harness.drill.checker.contract import WIPE_EVENT_KIND
from mirrordrill.harness.drill.checker.synthetic import FaultPlan, synthesize_flow
from mirrordrill.loadgen.histories.records import TimelineEvent
from tests.unit.checker_oracle import check_flow as oracle_check_flow

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# At least one fault of every kind in each example, so no kind's code path goes unchecked.
every_fault = st.builds(
    FaultPlan,
    lost=st.integers(1, 5), duplicated=st.integers(1, 5), max_extra_copies=st.integers(1, 3),
    swapped_pairs=st.integers(1, 5), misplaced=st.integers(1, 4), bad_reads=st.integers(1, 3),
    checksum_mismatches=st.integers(1, 3), source_duplicates=st.integers(1, 3),
    phantoms=st.integers(1, 4), uncertain_delivered=st.integers(1, 4),
    uncertain_undelivered=st.integers(1, 3), rereads=st.integers(1, 5))


@st.composite
def flows(draw):
    synthetic = synthesize_flow(
        draw(st.integers(0, 150)), seed=draw(st.integers(0, 2**32 - 1)),
        producers=draw(st.integers(1, 4)), topics=draw(st.integers(1, 3)),
        partitions=draw(st.integers(1, 4)), faults=draw(every_fault))
    flow = synthetic.flow
    timeline = list(flow.timeline)
    acks = sorted(a.ack_ts_ms for a in flow.acked)
    if acks and draw(st.booleans()):  # the source wiped mid-run: its partitions walked per incarnation
        at = acks[draw(st.integers(0, len(acks) - 1))]
        timeline.append(TimelineEvent(f"wipe {flow.source}", WIPE_EVENT_KIND, at, at + 10, "ok", ""))
    return dataclasses.replace(flow, timeline=tuple(timeline),
                               drained=draw(st.sampled_from([None, True, False])))


@SETTINGS
@given(flows())
def test_vectorised_check_agrees_with_the_per_record_oracle(flow):
    expected = oracle_check_flow(flow)
    assert check_flow(flow) == expected
    assert check_flow(as_columnar(flow)) == expected  # frames in, same figures out


def test_an_interrupted_drill_keeps_unseen_records_above_every_seen_one_in_flight():
    synthetic = synthesize_flow(60, seed=3, partitions=2, faults=FaultPlan(lost=4))
    flow = dataclasses.replace(synthetic.flow, drained=False)
    result = check_flow(flow)
    assert result == oracle_check_flow(flow)
    assert result.lost + result.in_flight == synthetic.expected.total("lost")
