"""MirrorMaker 1's adapter without clusters: its one include regex, what its consumers hold, its lag."""

from __future__ import annotations

import re

from mirrordrill.harness.drill.replicators import FlowSpec, PartitionMetrics
from mirrordrill.harness.drill.replicators.measurements import _lag_per_topic
from mirrordrill.harness.drill.replicators.mirrormaker1 import assignments, include_regex


def test_the_include_regex_leaves_out_what_the_flow_excludes_matching_whole_names():
    flow = FlowSpec("east", "west", topics=["orders.*", "audit"], topics_exclude=["orders-internal", ".*\\.replica"])
    regex = include_regex(flow)  # Java's Matcher.matches: the whole name, as re.fullmatch
    chosen = [t for t in ("orders", "orders-eu", "orders-internal", "orders.replica", "audit", "audit2", "payments")
              if re.fullmatch(regex, t)]
    assert chosen == ["orders", "orders-eu", "audit"]
    # MM2's default excludes hold too: internal topics stay where they are
    assert not re.fullmatch(include_regex(FlowSpec("east", "west", topics=[".*"])), "__consumer_offsets")


COORDINATOR = "[2026-12-05T08:59:04,1] INFO [Consumer clientId={c}, groupId=g] {what} (org.apache.kafka...)\n"


def test_a_consumer_holds_partitions_only_from_its_newest_assignment_after_its_last_rejoin():
    log = (COORDINATOR.format(c="c-0", what="Notifying assignor about the new Assignment(partitions=[t-0, t-1, t-2])")
           + COORDINATOR.format(c="c-1", what="(Re-)joining group")
           + COORDINATOR.format(c="c-0", what="Request joining group due to: rebalance")
           + COORDINATOR.format(c="c-1", what="Notifying assignor about the new Assignment(partitions=[t-2])"))
    assert assignments(log) == {"c-0": None, "c-1": ["t-2"]}
    log += COORDINATOR.format(c="c-0", what="Notifying assignor about the new Assignment(partitions=[t-0, t-1])")
    log += COORDINATOR.format(c="c-2", what="Notifying assignor about the new Assignment(partitions=[])")
    assert assignments(log) == {"c-0": ["t-0", "t-1"], "c-1": ["t-2"], "c-2": []}


def _row(p: int, src: int | None, dst: int | None, topic: str = "orders") -> PartitionMetrics:
    return PartitionMetrics("a->b", topic, topic, p, src, dst, None if src is None or dst is None else max(0, src - dst))


def test_a_repartitioning_replicators_lag_is_its_topics_summed_ends():
    # 30 records copied into other partition numbers: per partition the ends never meet, per topic they do
    rows = _lag_per_topic([_row(0, 10, 0), _row(1, 10, 5), _row(2, 10, 25)])
    assert [r.lag_records for r in rows] == [0, 0, 0]
    rows = _lag_per_topic([_row(0, 10, 0), _row(1, 10, 5), _row(2, 10, 20), _row(0, 4, 1, "audit")])
    assert [r.lag_records for r in rows] == [5, 0, 0, 3]
    assert [r.lag_records for r in _lag_per_topic([_row(0, 10, None), _row(1, 10, 10)])] == [None, 0]
