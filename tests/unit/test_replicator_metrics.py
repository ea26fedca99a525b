"""The interceptor files the replicator's metrics are read from: summed per target partition, heartbeats left out."""

from __future__ import annotations

import json
from pathlib import Path

from mirrordrill.replicator.metrics import BUCKETS, MetricsTracker, read_interceptor_files


def write_producer_file(folder: Path, name: str, partitions: list[tuple[str, int, int]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    doc = {"written_ms": 0, "partitions": [
        {"topic": t, "partition": p, "records": n, "bytes": 10 * n, "errors": 0, "latency_sum_ms": 5 * n,
         "latency_max_ms": 9, "latency_histogram": [n] + [0] * (BUCKETS - 1)} for t, p, n in partitions]}
    (folder / f"producer-{name}.json").write_text(json.dumps(doc))


def test_every_producer_of_a_partition_is_summed(tmp_path: Path) -> None:
    write_producer_file(tmp_path, "a", [("east.orders", 0, 3), ("east.orders", 1, 4)])
    write_producer_file(tmp_path, "b", [("east.orders", 0, 2)])
    got = read_interceptor_files(tmp_path)
    assert {k: m.records for k, m in got.items()} == {("east.orders", 0): 5, ("east.orders", 1): 4}
    assert got[("east.orders", 0)].histogram[0] == 5


def test_the_warm_ups_heartbeats_are_not_counted_as_replicated_records(tmp_path: Path) -> None:
    # the warm-up writes heartbeats through the flow's own sink, whose interceptor counts them
    write_producer_file(tmp_path, "a", [("heartbeats", 0, 300), ("east.orders", 0, 7)])
    tracker = MetricsTracker(tmp_path, frozenset({"heartbeats"}))
    assert [(m.topic, m.records) for m in tracker.sample()] == [("east.orders", 7)]
    assert set(read_interceptor_files(tmp_path)) == {("heartbeats", 0), ("east.orders", 0)}
