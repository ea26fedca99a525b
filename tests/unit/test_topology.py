"""Topology and link-condition validation (pure logic)."""

import pytest

from mirrordrill.harness.lab.brokers.cluster import ClusterSpec
from mirrordrill.harness.lab.environment import TopologySpec
from mirrordrill.harness.lab.network.wan import BLACKHOLE_HOLD_MS, LinkConditions


def test_full_mesh_by_default():
    spec = TopologySpec(clusters=(ClusterSpec("a"), ClusterSpec("b"), ClusterSpec("c")))
    assert spec.link_pairs() == [("a", "b"), ("a", "c"), ("b", "c")]
    assert spec.remotes_of("b") == ["a", "c"]


def test_explicit_links_only():
    spec = TopologySpec(clusters=(ClusterSpec("a"), ClusterSpec("b"), ClusterSpec("c")),
                        links=(("a", "b"), ("b", "a"), ("b", "c")))
    assert spec.link_pairs() == [("a", "b"), ("b", "c")]
    assert spec.remotes_of("a") == ["b"]


@pytest.mark.parametrize("name", ["us.east", "1dc", "", "a b"])
def test_bad_cluster_names(name):
    with pytest.raises(ValueError, match="cluster name"):
        TopologySpec(clusters=(ClusterSpec(name),))


def test_names_that_collide_as_listener_names():
    with pytest.raises(ValueError, match="same once normalised"):
        TopologySpec(clusters=(ClusterSpec("dc-a"), ClusterSpec("dc_a")))


def test_link_to_unknown_cluster_names_the_valid_ones():
    with pytest.raises(ValueError, match=r"unknown cluster 'c'; clusters are \['a', 'b'\]"):
        TopologySpec(clusters=(ClusterSpec("a"), ClusterSpec("b")), links=(("a", "c"),))


def test_clean_link_has_no_toxics():
    assert LinkConditions().toxics("upstream") == []
    assert LinkConditions().clean


def test_conditions_become_toxics_on_the_stream():
    toxics = {t.type: t for t in LinkConditions(latency_ms=50, jitter_ms=5, bandwidth_kb_s=100,
                                                 slice_bytes=64, reset_after_ms=10).toxics("downstream")}
    assert toxics["latency"].attributes == {"latency": 50, "jitter": 5}
    assert toxics["bandwidth"].attributes == {"rate": 100}
    assert toxics["slicer"].attributes["average_size"] == 64
    assert toxics["reset_peer"].attributes == {"timeout": 10}
    assert all(t.stream == "downstream" for t in toxics.values())


def test_blackhole_holds_data_instead_of_dropping_it():
    (hold,) = LinkConditions(blackhole=True).toxics("upstream")
    assert hold.type == "latency" and hold.attributes["latency"] == BLACKHOLE_HOLD_MS


@pytest.mark.parametrize("kwargs,msg", [
    ({"latency_ms": -1}, "latency_ms must be >= 0"),
    ({"latency_ms": 10, "jitter_ms": 20}, "cannot exceed"),
    ({"bandwidth_kb_s": 0}, "use blackhole"),
])
def test_invalid_conditions(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        LinkConditions(**kwargs)
