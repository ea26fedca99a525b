"""A sweep names the bottleneck each point hit (load, replicator CPU, WAN bandwidth, target), with its figure."""

from __future__ import annotations

import pytest

from mirrordrill.harness.tools.sweep.bottleneck import find_bottleneck, link_bandwidth_kb_s, replicator_cores
from mirrordrill.harness.tools.sweep.points import Ceiling, SweepPoint


def point(carried=2000.0, produced=5000.0, asked=5000.0, cores=0.5, available=2.0, wan_b=500.0, link=None,
          bounded=False, streams=1) -> SweepPoint:
    return SweepPoint(params={"num_streams": streams}, run_dir="/nowhere", passed=True, replicated_records_s=carried,
                      sustained_records_s=carried, produced_records_s=produced, lag_bounded=bounded,
                      final_lag=0 if bounded else 9000, latency_p50_ms=10, latency_p99_ms=90, replicator_cpu_s=10.0,
                      replicator_cpu_cores=cores, lost=0, seconds=60.0, asked_records_s=asked,
                      replicator_cores_available=available, wan_bytes_per_record=wan_b, wan_bandwidth_kb_s=link)


def test_a_load_that_fell_short_is_the_bottleneck_whatever_else_was_full():
    b = find_bottleneck(point(produced=3000.0, asked=5000.0, cores=2.0), None)
    assert b.kind == "load" and "3,000 of the 5,000 records/s asked" in b.evidence


def test_replicator_cpu_when_its_cores_were_full():
    b = find_bottleneck(point(cores=1.8, available=2.0), None)
    assert b.kind == "replicator CPU" and b.evidence.startswith("1.8 of 2 cores busy, 90%")


def test_wan_bandwidth_from_the_bytes_measured_against_the_links_configured_rate():
    # 2,000 records/s x 500 B = 1,000 KB/s through a 1,000 KB/s link; the CPU at 50% is not the limit
    b = find_bottleneck(point(cores=1.0, link=1000), None)
    assert b.kind == "WAN bandwidth" and "1,000 KB/s carried, 100% of the link's 1,000 KB/s per connection" in b.evidence
    # the same bytes through a link ten times wider bound nothing
    assert find_bottleneck(point(cores=1.0, link=10_000), None).kind == "unknown"


def test_the_target_when_the_flow_carried_what_a_producer_alone_reached():
    b = find_bottleneck(point(carried=1900.0), Ceiling(2000.0, 9000.0, 1024))
    assert b.kind == "target" and "1,900 records/s is 95% of the 2,000/s" in b.evidence


def test_the_most_used_of_several_full_resources_wins():
    # CPU 90%, WAN 100%: the link is named
    assert find_bottleneck(point(cores=1.8, link=1000), None).kind == "WAN bandwidth"


def test_none_when_the_flow_kept_up_and_unknown_when_lag_grew_with_nothing_full():
    kept = find_bottleneck(point(carried=5000.0, bounded=True, wan_b=100.0, link=10_000), None)
    assert kept.kind == "none" and "kept up with the offered 5,000 records/s" in kept.evidence
    assert "500 KB/s carried, 5% of the link's 10,000 KB/s" in kept.evidence  # the figures still shown
    grew = find_bottleneck(point(cores=None, wan_b=None, available=None), None)
    assert grew.kind == "unknown" and "no CPU, WAN or target figure" in grew.evidence


@pytest.mark.parametrize(("replication", "master", "expected"), [
    ({"replicator": "pyspark", "spark": {"master": "local[1]"}}, None, 1.0),
    ({"replicator": "pyspark", "spark": {"master": "standalone", "executors": 1, "executor_cores": 1}}, None, 1.0),
    ({"replicator": "pyspark", "spark": {"executors": 1, "executor_cores": 1}}, "standalone", 1.0),
    ({"replicator": "pyspark", "spark": {"master": "standalone", "executors": 64, "executor_cores": 2}}, None, "machine"),
    ({"replicator": "mirrormaker2"}, None, "machine"),
])
def test_replicator_cores_are_what_its_spark_deployment_may_use(replication, master, expected):
    import os
    machine = float(os.cpu_count() or 1)
    got = replicator_cores({"replication": replication}, master)
    assert got == (machine if expected == "machine" else min(machine, expected))


def test_the_links_bandwidth_is_the_one_between_the_flows_ends():
    drill = {"replication": {"flows": [{"source": "a", "target": "b"}]},
             "links": [{"between": ["a", "c"], "bandwidth_kb_s": 5}, {"between": ["b", "a"], "bandwidth_kb_s": 800}]}
    assert link_bandwidth_kb_s(drill) == 800.0
    drill["links"][1].pop("bandwidth_kb_s")
    assert link_bandwidth_kb_s(drill) is None


def test_the_recommendation_and_the_table_name_the_bottleneck(tmp_path):
    from mirrordrill.harness.tools.sweep.params import parse_params
    from mirrordrill.harness.tools.sweep.result import SweepResult
    params = parse_params(["num_streams=1,2"])
    points = [point(carried=1000.0, cores=0.9, streams=1), point(carried=1900.0, cores=1.9, streams=2)]
    result = SweepResult(tmp_path, params, points, None)
    assert "bottleneck at num_streams=2: replicator CPU (1.9 of 2 cores busy, 95%)" in result.recommendation()
    assert "bottleneck at num_streams=1: unknown" in result.table()


def test_the_machine_s_cpu_when_every_core_was_busy_names_who_kept_them_busy():
    pt = point(cores=0.65)
    pt.machine_cores = 2
    pt.backlog_cores = {"replicator": 0.65, "brokers dr": 0.47, "harness": 0.42, "machine": 1.9}
    b = find_bottleneck(pt, Ceiling(30_000.0, 300_000.0, 1024))  # the target's ceiling far from reached
    assert b.kind == "machine CPU"
    assert b.evidence == "1.90 of the machine's 2 cores busy, 95%: replicator 0.65, brokers dr 0.47, harness 0.42"
    pt.backlog_cores = {**pt.backlog_cores, "machine": 1.2}  # cores to spare: not the limit
    assert find_bottleneck(pt, None).kind == "unknown"
    pt.machine_cores = None  # a point from before the machine's cores were kept
    assert find_bottleneck(pt, None).kind == "unknown"
