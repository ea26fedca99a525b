"""The bundled replicator's lag as a drain reads it: end-offset lag corrected by the replicator's own figure."""

from harness.drill.replicators.measurements import PartitionMetrics, ReplicatorMetrics
from harness.drill.replicators.pyspark_lag import OwnFigures, merged_metrics


def sample(*rows: tuple[str, str, str, int | None]) -> ReplicatorMetrics:
    """End-offset rows ``(flow, topic, remote topic, lag)`` of partition 0."""
    return ReplicatorMetrics(1.0, "end-offsets", tuple(
        PartitionMetrics(flow, topic, remote, 0, source_end_offset=100, target_end_offset=100, lag_records=lag)
        for flow, topic, remote, lag in rows))


def status(lag: int, latency: float = 7.0) -> dict:
    return {"flows": {"east->west": [{"topic": "east.orders", "partition": 0, "lag": lag, "latency_avg_ms": latency}]}}


def lags(metrics: ReplicatorMetrics) -> list[int | None]:
    return [p.lag_records for p in metrics.partitions]


def test_a_fresh_own_lag_above_the_end_offset_lag_wins_after_a_crash_s_recopies():
    own = OwnFigures()
    own.add(status(lag=390), fresh=True)
    merged = merged_metrics(sample(("east->west", "orders", "east.orders", 0)), own, restored=[])
    assert lags(merged) == [390]
    assert merged.partitions[0].replication_latency_ms == 7.0
    assert merged.method == "end-offsets + producer acks"


def test_a_stale_own_lag_is_not_trusted_but_its_latency_is_shown():
    own = OwnFigures()
    own.add(status(lag=390), fresh=False)
    merged = merged_metrics(sample(("east->west", "orders", "east.orders", 12)), own, restored=[])
    assert lags(merged) == [12]
    assert merged.partitions[0].replication_latency_ms == 7.0


def test_in_a_restored_topic_the_own_lag_is_the_lag_even_when_smaller():
    own = OwnFigures()
    own.add(status(lag=0), fresh=True)
    merged = merged_metrics(sample(("east->west", "orders", "east.orders", 500)), own,
                            restored=[("east->west", "orders")])
    assert lags(merged) == [0]  # the re-protect's later copies are no lag
