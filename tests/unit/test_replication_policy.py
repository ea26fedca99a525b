"""Replication policies: MM2's naming rules, upstream chains and cycle prevention."""

from __future__ import annotations

import pytest

from mirrordrill.replicator.policy import (
    PROVENANCE_HEADER,
    DefaultReplicationPolicy,
    IdentityReplicationPolicy,
    ReplicationPolicy,
    add_provenance,
    parse_provenance,
    policy_from_name,
    provenance_from_headers,
    record_would_cycle,
)


def replicate(policy: ReplicationPolicy, topic: str, source: str, target: str) -> str | None:
    """The topic's name on ``target`` after one hop, or None when the hop is refused."""
    if not policy.should_replicate(topic, source, target):
        return None
    return policy.format_remote_topic(source, topic)


# -- default policy: naming ------------------------------------------------------------
def test_default_policy_prefixes_source_alias() -> None:
    policy = DefaultReplicationPolicy()
    assert policy.format_remote_topic("A", "orders") == "A.orders"
    assert policy.topic_source("A.orders") == "A"
    assert policy.upstream_topic("A.orders") == "orders"
    assert policy.topic_source("orders") is None
    assert policy.upstream_topic("orders") is None
    assert policy.original_topic("orders") == "orders"


def test_custom_separator() -> None:
    policy = DefaultReplicationPolicy(separator="__")
    assert policy.format_remote_topic("east", "orders.v1") == "east__orders.v1"
    assert policy.topic_source("east__orders.v1") == "east"
    assert policy.upstream_topic("east__orders.v1") == "orders.v1"
    # With "__" as separator a dotted name is a local topic.
    assert policy.topic_source("orders.v1") is None


def test_multi_hop_upstream_chain() -> None:
    policy = DefaultReplicationPolicy()
    assert policy.upstream_topic("C.B.A.orders") == "B.A.orders"
    assert policy.original_topic("C.B.A.orders") == "orders"
    assert policy.upstream_chain("C.B.A.orders") == ["C", "B", "A"]
    assert policy.upstream_chain("orders") == []


@pytest.mark.parametrize(
    ("topic", "source", "upstream"),
    [
        ("A.", None, None),  # Java's split drops the trailing empty part: not a remote topic
        ("A.b.", "A", "b."),
        (".hidden", "", "hidden"),
        ("", None, None),
        ("A..b", "A", ".b"),
    ],
)
def test_topic_source_follows_java_split(topic: str, source: str | None, upstream: str | None) -> None:
    policy = DefaultReplicationPolicy()
    assert policy.topic_source(topic) == source
    assert policy.upstream_topic(topic) == upstream


def test_empty_separator_is_rejected() -> None:
    with pytest.raises(ValueError, match="separator"):
        DefaultReplicationPolicy(separator="")


# -- default policy: internal topics -----------------------------------------------------
def test_internal_topic_names() -> None:
    policy = DefaultReplicationPolicy()
    assert policy.heartbeats_topic() == "heartbeats"
    assert policy.checkpoints_topic("A") == "A.checkpoints.internal"
    assert policy.offset_syncs_topic("B") == "mm2-offset-syncs.B.internal"


def test_internal_topic_names_follow_custom_separator() -> None:
    policy = DefaultReplicationPolicy(separator="_")
    assert policy.checkpoints_topic("A") == "A_checkpoints_internal"
    assert policy.offset_syncs_topic("B") == "mm2-offset-syncs_B_internal"
    assert policy.is_checkpoints_topic("A_checkpoints_internal")
    legacy = DefaultReplicationPolicy(separator="_", internal_topic_separator_enabled=False)
    assert legacy.checkpoints_topic("A") == "A.checkpoints.internal"
    assert legacy.offset_syncs_topic("B") == "mm2-offset-syncs.B.internal"


@pytest.mark.parametrize(
    "topic",
    [
        "__consumer_offsets",
        "__transaction_state",
        ".hidden",
        "mm2-offset-syncs.B.internal",
        "A.checkpoints.internal",
        "mm2-configs.A.internal",
        "connect-offsets-internal",
    ],
)
def test_internal_topics(topic: str) -> None:
    assert DefaultReplicationPolicy().is_internal_topic(topic)


@pytest.mark.parametrize("topic", ["orders", "A.orders", "heartbeats", "A.heartbeats", "internal", "internals"])
def test_not_internal_topics(topic: str) -> None:
    assert not DefaultReplicationPolicy().is_internal_topic(topic)


def test_heartbeat_and_checkpoint_detection() -> None:
    policy = DefaultReplicationPolicy()
    assert policy.is_heartbeats_topic("heartbeats")
    assert policy.is_heartbeats_topic("A.heartbeats")
    assert policy.is_heartbeats_topic("B.A.heartbeats")
    assert not policy.is_heartbeats_topic("myheartbeats")
    assert not policy.is_heartbeats_topic("heartbeats.v2")
    assert policy.is_checkpoints_topic("A.checkpoints.internal")
    assert not policy.is_checkpoints_topic("A.checkpoints")
    assert policy.is_mm2_internal_topic("mm2-offset-syncs.A.internal")


# -- default policy: cycles by name -----------------------------------------------------
def test_active_active_never_sends_a_topic_back() -> None:
    policy = DefaultReplicationPolicy()
    # orders produced on A reaches B as A.orders ...
    assert replicate(policy, "orders", "A", "B") == "A.orders"
    # ... and B->A refuses to copy it back, by name.
    assert policy.is_cycle("A.orders", "A")
    assert replicate(policy, "A.orders", "B", "A") is None
    # B's own orders still flow to A.
    assert replicate(policy, "orders", "B", "A") == "B.orders"


def test_chain_a_b_c() -> None:
    policy = DefaultReplicationPolicy()
    on_b = replicate(policy, "orders", "A", "B")
    on_c = replicate(policy, on_b, "B", "C")
    assert on_c == "B.A.orders"
    assert policy.upstream_chain(on_c) == ["B", "A"]
    # A longer chain keeps going while it meets no cluster twice.
    on_d = replicate(policy, on_c, "C", "D")
    assert on_d == "C.B.A.orders"
    assert replicate(policy, on_d, "D", "E") == "D.C.B.A.orders"
    # A ring back to any cluster already in the chain is refused.
    assert replicate(policy, on_c, "C", "A") is None
    assert replicate(policy, on_d, "D", "B") is None
    assert replicate(policy, on_d, "D", "A") is None


def test_aggregation_three_to_one() -> None:
    policy = DefaultReplicationPolicy()
    names = {replicate(policy, "orders", source, "D") for source in ("A", "B", "C")}
    assert names == {"A.orders", "B.orders", "C.orders"}
    assert {policy.topic_source(name) for name in names} == {"A", "B", "C"}
    assert {policy.original_topic(name) for name in names} == {"orders"}


def test_fan_out_one_to_three() -> None:
    policy = DefaultReplicationPolicy()
    for target in ("B", "C", "D"):
        assert replicate(policy, "orders", "A", target) == "A.orders"
    # A mesh among the targets may pass A's topic along, but never back to A.
    assert replicate(policy, "A.orders", "B", "C") == "B.A.orders"
    assert replicate(policy, "A.orders", "B", "A") is None


def test_never_replicates_to_itself() -> None:
    assert not DefaultReplicationPolicy().should_replicate("orders", "A", "A")


def test_default_policy_also_honours_the_provenance_header() -> None:
    policy = DefaultReplicationPolicy()
    headers = [(PROVENANCE_HEADER, b"A")]
    assert not policy.should_replicate("orders", "B", "A", headers)
    assert policy.should_replicate("orders", "B", "C", headers)


# -- identity policy ---------------------------------------------------------------------
def test_identity_keeps_names_but_renames_heartbeats() -> None:
    policy = IdentityReplicationPolicy(source_cluster_alias="A")
    assert policy.format_remote_topic("A", "orders") == "orders"
    assert policy.format_remote_topic("A", "heartbeats") == "A.heartbeats"
    assert policy.topic_source("orders") == "A"
    assert policy.upstream_topic("orders") == "orders"
    assert policy.original_topic("orders") == "orders"
    assert policy.topic_source("B.heartbeats") == "B"
    assert policy.upstream_topic("B.heartbeats") == "heartbeats"
    assert policy.is_heartbeats_topic("B.heartbeats")
    assert IdentityReplicationPolicy().topic_source("orders") is None


def test_identity_cannot_see_cycles_in_names() -> None:
    policy = IdentityReplicationPolicy(source_cluster_alias="B")
    # orders went A->B unchanged; the name cannot tell B->A that it came from A.
    assert not policy.is_cycle("orders", "A")
    assert policy.should_replicate("orders", "B", "A")
    # Heartbeats keep their history, as in MM2.
    assert policy.is_cycle("A.heartbeats", "A")


def test_identity_active_active_stops_loops_by_header() -> None:
    policy = IdentityReplicationPolicy()
    produced_on_a: list[tuple[str, bytes]] = []  # a record produced by an application on A
    assert policy.should_replicate("orders", "A", "B", produced_on_a)
    on_b = [(PROVENANCE_HEADER, add_provenance(None, "A"))]
    assert provenance_from_headers(on_b) == ["A"]
    assert not policy.should_replicate("orders", "B", "A", on_b)


def test_identity_ring_of_three_stops_where_it_started() -> None:
    policy = IdentityReplicationPolicy()
    header = None
    hops = [("A", "B"), ("B", "C")]
    for source, target in hops:
        assert policy.should_replicate("orders", source, target, {PROVENANCE_HEADER: header})
        header = add_provenance(header, source)
    assert header == b"A,B"
    assert not policy.should_replicate("orders", "C", "A", {PROVENANCE_HEADER: header})
    assert not policy.should_replicate("orders", "C", "B", {PROVENANCE_HEADER: header})
    assert policy.should_replicate("orders", "C", "D", {PROVENANCE_HEADER: header})


# -- provenance header -------------------------------------------------------------------
def test_provenance_header_values() -> None:
    assert PROVENANCE_HEADER == "mirrordrill.provenance"
    assert add_provenance(None, "A") == b"A"
    assert add_provenance(b"", "A") == b"A"
    assert add_provenance(b"A", "B") == b"A,B"
    assert add_provenance("A,B", "C") == b"A,B,C"
    assert parse_provenance(b"A, B ,C") == ["A", "B", "C"]
    assert parse_provenance(None) == []
    assert record_would_cycle(b"A,B", "A")
    assert record_would_cycle("A,B", "B")
    assert not record_would_cycle(b"A,B", "C")
    assert not record_would_cycle(None, "A")
    assert not record_would_cycle(b"AB", "A")  # aliases are whole names


def test_provenance_rejects_bad_aliases() -> None:
    for alias in ("", "A,B", " A"):
        with pytest.raises(ValueError):
            add_provenance(None, alias)


def test_provenance_from_headers_accepts_pairs_and_mappings() -> None:
    assert provenance_from_headers({PROVENANCE_HEADER: b"A", "other": b"x"}) == ["A"]
    assert provenance_from_headers([("other", b"x"), (PROVENANCE_HEADER, b"A"), (PROVENANCE_HEADER, "B")]) == ["A", "B"]
    assert provenance_from_headers([]) == []
    assert provenance_from_headers([(PROVENANCE_HEADER, None)]) == []


# -- construction ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("default", DefaultReplicationPolicy),
        ("DefaultReplicationPolicy", DefaultReplicationPolicy),
        ("org.apache.kafka.connect.mirror.DefaultReplicationPolicy", DefaultReplicationPolicy),
        ("identity", IdentityReplicationPolicy),
        ("IdentityReplicationPolicy", IdentityReplicationPolicy),
        (" org.apache.kafka.connect.mirror.IdentityReplicationPolicy ", IdentityReplicationPolicy),
    ],
)
def test_policy_from_name(name: str, kind: type) -> None:
    policy = policy_from_name(name, "_", source_cluster_alias="A")
    assert type(policy) is kind
    assert policy.separator == "_"
    assert isinstance(policy, ReplicationPolicy)


def test_policy_from_name_passes_options() -> None:
    identity = policy_from_name("identity", source_cluster_alias="east")
    assert isinstance(identity, IdentityReplicationPolicy)
    assert identity.topic_source("orders") == "east"
    legacy = policy_from_name("default", "_", internal_topic_separator_enabled=False)
    assert legacy.checkpoints_topic("A") == "A.checkpoints.internal"


def test_policy_from_unknown_name() -> None:
    with pytest.raises(ValueError, match=r"com\.example\.MyPolicy.*valid: default"):
        policy_from_name("com.example.MyPolicy")
