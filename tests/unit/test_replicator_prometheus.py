"""The replicator's Prometheus text: parsed back strictly, served on loopback only."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from mirrordrill.replicator.metrics import BUCKETS, PartitionMetrics
from mirrordrill.replicator.prometheus import CONTENT_TYPE, MetricsPortTaken, MetricsServer, render
from tests.prometheus_text import parse


def partition(topic="A.orders", p=0, hist=None, **kw) -> PartitionMetrics:
    m = PartitionMetrics(topic, p, **kw)
    if hist:
        for i, n in hist.items():
            m.histogram[i] = n
    return m


def sample_doc() -> str:
    hot = partition(hist={0: 2, 3: 5, 10: 1, BUCKETS - 1: 1}, records=9, bytes=900, latency_sum_ms=3_000_000_000,
                    lag=4)
    odd = partition('we"ird\\name\n', 1, hist={1: 1}, records=1, bytes=10, latency_sum_ms=1)
    idle = partition("A.idle", 0, lag=0)  # lag known, nothing copied yet
    return render({"A->B": [hot, odd, idle]}, {"A->B": {"query_starts": 2, "query_failures": 1}},
                  {"spark_session_s": 3.5, "warm_up_s": 5.0, "first_query_s": None})


def test_every_family_is_declared_typed_and_parses():
    fams = parse(sample_doc())
    p = "mirrordrill_replicator_"
    assert {n: f["type"] for n, f in fams.items()} == {
        p + "replication_latency_seconds": "histogram", p + "records_copied_total": "counter",
        p + "bytes_copied_total": "counter", p + "write_errors_total": "counter", p + "lag_records": "gauge",
        p + "query_starts_total": "counter", p + "query_failures_total": "counter", p + "startup_seconds": "gauge"}


def test_latency_histogram_is_cumulative_with_exact_bounds():
    fams = parse(sample_doc())
    samples = fams["mirrordrill_replicator_replication_latency_seconds"]["samples"]
    where = {"flow": "A->B", "topic": "A.orders", "partition": "0"}
    mine = [(n, {k: v for k, v in lab.items() if k != "le"}, lab.get("le"), v) for n, lab, v in samples
            if {k: lab[k] for k in where} == where]
    buckets = [(float(le), v) for n, _, le, v in mine if n.endswith("_bucket")]
    # 0 ms, then [2^(i-1), 2^i) ms has inclusive bound 2^i - 1 ms; the open-ended last bucket is +Inf only
    assert [le for le, _ in buckets] == [((1 << i) - 1) / 1000 for i in range(BUCKETS - 1)] + [float("inf")]
    counts = [v for _, v in buckets]
    assert counts == sorted(counts)
    by_le = dict(buckets)
    assert (by_le[0.0], by_le[0.003], by_le[0.007], by_le[1.023], by_le[float("inf")]) == (2, 2, 7, 8, 9)
    assert by_le[((1 << (BUCKETS - 2)) - 1) / 1000] == 8  # the clamped last bucket shows only in +Inf
    totals = {n.rsplit("_", 1)[1]: v for n, _, _, v in mine if not n.endswith("_bucket")}
    assert totals == {"sum": 3_000_000.0, "count": 9}


def test_labels_are_escaped_and_read_back():
    fams = parse(sample_doc())
    topics = {lab["topic"] for _, lab, _ in fams["mirrordrill_replicator_records_copied_total"]["samples"]}
    assert topics == {"A.orders", 'we"ird\\name\n'}


def test_counters_lag_flow_status_and_startup():
    fams = parse(sample_doc())

    def values(name):
        return {tuple(sorted(lab.items())): v for _, lab, v in fams["mirrordrill_replicator_" + name]["samples"]}
    assert values("bytes_copied_total")[(("flow", "A->B"), ("partition", "0"), ("topic", "A.orders"))] == 900
    assert values("lag_records") == {(("flow", "A->B"), ("partition", "0"), ("topic", "A.orders")): 4,
                                     (("flow", "A->B"), ("partition", "0"), ("topic", "A.idle")): 0}
    assert values("query_starts_total") == {(("flow", "A->B"),): 2}
    assert values("query_failures_total") == {(("flow", "A->B"),): 1}
    assert values("startup_seconds") == {(("phase", "spark_session"),): 3.5, (("phase", "warm_up"),): 5.0}


def test_server_serves_the_latest_text_on_loopback_and_stops():
    server = MetricsServer(0).start()
    try:
        assert server.server_address[0] == "127.0.0.1"
        assert server.url.startswith("http://127.0.0.1:") and server.url.endswith("/metrics")
        server.text = sample_doc()
        with urllib.request.urlopen(server.url, timeout=5) as resp:
            assert resp.headers["Content-Type"] == CONTENT_TYPE
            assert resp.read().decode() == sample_doc()
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(server.url.replace("/metrics", "/other"), timeout=5)
        assert err.value.code == 404
        with pytest.raises(MetricsPortTaken, match="mirrordrill.metrics.port"):
            MetricsServer(server.server_address[1])  # taken: the error names the setting to change
    finally:
        server.stop()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(server.url, timeout=5)
