"""The bundled replicator's lag as a drain reads it: end-offset lag corrected by the replicator's own figure."""

from mirrordrill.harness.drill.replicators.measurements import PartitionMetrics, ReplicatorMetrics
from mirrordrill.harness.drill.replicators.pyspark_lag import OwnFigures, merged_metrics


def sample(*rows: tuple[str, str, str, int | None]) -> ReplicatorMetrics:
    """End-offset rows ``(flow, topic, remote topic, lag)`` of partition 0."""
    return ReplicatorMetrics(1.0, "end-offsets", tuple(
        PartitionMetrics(flow, topic, remote, 0, source_end_offset=100, target_end_offset=100, lag_records=lag)
        for flow, topic, remote, lag in rows))


def merged(own_lag: int, fresh: bool, end_offset_lag: int, restored: bool = False) -> PartitionMetrics:
    """Partition 0 of east.orders as reported, after the replicator wrote ``own_lag`` (7 ms ack latency)."""
    own = OwnFigures()
    own.add({"flows": {"east->west": [{"topic": "east.orders", "partition": 0, "lag": own_lag,
                                        "latency_avg_ms": 7.0}]}}, fresh=fresh)
    metrics = merged_metrics(sample(("east->west", "orders", "east.orders", end_offset_lag)), own,
                             restored=[("east->west", "orders")] if restored else [])
    assert metrics.method == "end-offsets + producer acks"
    return metrics.partitions[0]


def test_a_fresh_own_lag_above_the_end_offset_lag_wins_after_a_crash_s_recopies():
    row = merged(own_lag=390, fresh=True, end_offset_lag=0)
    assert (row.lag_records, row.replication_latency_ms) == (390, 7.0)


def test_a_stale_own_lag_is_not_trusted_but_its_latency_is_shown():
    row = merged(own_lag=390, fresh=False, end_offset_lag=12)
    assert (row.lag_records, row.replication_latency_ms) == (12, 7.0)


def test_in_a_restored_topic_the_own_lag_is_the_lag_even_when_smaller():
    row = merged(own_lag=0, fresh=True, end_offset_lag=500, restored=True)
    assert row.lag_records == 0  # the re-protect's later copies are no lag
