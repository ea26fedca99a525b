"""Which (origin, target) pairs a scenario's flows connect, and under which topic names."""

from mirrordrill.harness.drill.schema import Scenario
from mirrordrill.harness.drill.topology import check_pairs


def scenario(flows, policy="default", clusters=("a", "b", "c")) -> Scenario:
    return Scenario.model_validate({
        "name": "t", "clusters": {c: {} for c in clusters},
        "replication": {"policy": policy, "flows": [{"source": s, "target": t} for s, t in flows]},
    })


def pairs(s, origins):
    return {p.name: p.topic_map for p in check_pairs(s, origins)}


def test_one_flow_renames_with_the_source_alias():
    assert pairs(scenario([("a", "b")]), {"a": {"orders"}}) == {"a->b": {"a.orders": "orders"}}


def test_forwarding_chain_is_checked_end_to_end():
    got = pairs(scenario([("a", "b"), ("b", "c")]), {"a": {"orders"}})
    assert got == {"a->b": {"a.orders": "orders"}, "a->c (via b)": {"b.a.orders": "orders"}}


def test_active_active_never_comes_back():
    got = pairs(scenario([("a", "b"), ("b", "a")], clusters=("a", "b")), {"a": {"x"}, "b": {"y"}})
    assert got == {"a->b": {"a.x": "x"}, "b->a": {"b.y": "y"}}


def test_aggregation_and_fan_out():
    hub = pairs(scenario([("a", "c"), ("b", "c")]), {"a": {"t"}, "b": {"t"}})
    assert hub == {"a->c": {"a.t": "t"}, "b->c": {"b.t": "t"}}
    fan = pairs(scenario([("a", "b"), ("a", "c")]), {"a": {"t"}})
    assert fan == {"a->b": {"a.t": "t"}, "a->c": {"a.t": "t"}}


def test_identity_policy_keeps_names_and_stops_at_the_origin():
    got = pairs(scenario([("a", "b"), ("b", "a")], policy="identity", clusters=("a", "b")), {"a": {"t"}})
    assert got == {"a->b": {"t": "t"}}
