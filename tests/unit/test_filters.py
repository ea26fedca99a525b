"""Topic, group and topic-config filters, with MM2's defaults and matching rules."""

from __future__ import annotations

import pytest

from mirrordrill.primitives.properties_syntax import parse_mm2_list
from mirrordrill.replicator.filters import (
    DEFAULT_CONFIG_PROPERTIES_EXCLUDE,
    DEFAULT_GROUPS_EXCLUDE,
    DEFAULT_TOPICS_EXCLUDE,
    ConfigPropertyFilter,
    GroupFilter,
    TopicFilter,
    TopicSelector,
    compile_pattern_list,
)
from mirrordrill.replicator.policy import DefaultReplicationPolicy, IdentityReplicationPolicy


def test_defaults_equal_kafka_source_strings() -> None:
    # The Java string literals of DefaultTopicFilter, DefaultGroupFilter and
    # DefaultConfigPropertyFilter, after Java unescaping, split as ConfigDef splits lists.
    assert tuple(parse_mm2_list(".*[\\-\\.]internal, .*\\.replica, __.*")) == DEFAULT_TOPICS_EXCLUDE
    assert tuple(parse_mm2_list("console-consumer-.*, connect-.*, __.*")) == DEFAULT_GROUPS_EXCLUDE
    assert (
        tuple(
            parse_mm2_list(
                "follower\\.replication\\.throttled\\.replicas, leader\\.replication\\.throttled\\.replicas, "
                "message\\.timestamp\\.difference\\.max\\.ms, message\\.timestamp\\.type, "
                "unclean\\.leader\\.election\\.enable, min\\.insync\\.replicas"
            )
        )
        == DEFAULT_CONFIG_PROPERTIES_EXCLUDE
    )


# -- topics ------------------------------------------------------------------------------
@pytest.mark.parametrize("topic", ["orders", "payments.v1", "A.orders", "heartbeats", "replica", "internal"])
def test_default_topic_filter_accepts(topic: str) -> None:
    assert TopicFilter().should_replicate_topic(topic)


@pytest.mark.parametrize(
    "topic",
    ["x.internal", "x-internal", "mm2-offset-syncs.B.internal", "orders.replica", "__consumer_offsets", "__x"],
)
def test_default_topic_filter_excludes(topic: str) -> None:
    assert not TopicFilter().should_replicate_topic(topic)


def test_topic_patterns_match_the_whole_name() -> None:
    topic_filter = TopicFilter(include=("orders",))
    assert topic_filter.should_replicate_topic("orders")
    assert not topic_filter.should_replicate_topic("orders2")
    assert not topic_filter.should_replicate_topic("my-orders")


def test_pattern_list_is_one_anchored_alternation() -> None:
    topic_filter = TopicFilter(include=("a", "b.*"), exclude=())
    assert topic_filter.should_replicate_topic("a")
    assert topic_filter.should_replicate_topic("bcd")
    assert not topic_filter.should_replicate_topic("ab")  # neither alternative covers the whole name
    pattern = compile_pattern_list(["a", "b.*"])
    assert pattern is not None and pattern.pattern == "a|b.*"


def test_empty_include_matches_nothing_and_empty_exclude_excludes_nothing() -> None:
    assert compile_pattern_list([]) is None
    assert not TopicFilter(include=()).should_replicate_topic("orders")
    assert TopicFilter(exclude=()).should_replicate_topic("__consumer_offsets")


def test_exclude_wins_over_include() -> None:
    topic_filter = TopicFilter(include=("orders.*",), exclude=("orders\\.test",))
    assert topic_filter.should_replicate_topic("orders.live")
    assert not topic_filter.should_replicate_topic("orders.test")


def test_custom_topic_exclude_replaces_the_default() -> None:
    topic_filter = TopicFilter(exclude=("tmp-.*",))
    assert not topic_filter.should_replicate_topic("tmp-1")
    assert topic_filter.should_replicate_topic("x.internal")


# -- groups ------------------------------------------------------------------------------
def test_group_filter_defaults() -> None:
    group_filter = GroupFilter()
    assert group_filter.should_replicate_group("billing")
    for group in ("console-consumer-4711", "connect-mm2", "__internal"):
        assert not group_filter.should_replicate_group(group)


def test_group_filter_custom_lists() -> None:
    group_filter = GroupFilter(include=("billing-.*", "shipping"), exclude=("billing-test",))
    assert group_filter.should_replicate_group("billing-eu")
    assert group_filter.should_replicate_group("shipping")
    assert not group_filter.should_replicate_group("billing-test")
    assert not group_filter.should_replicate_group("shipping-2")


# -- topic configs -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "prop",
    [
        "follower.replication.throttled.replicas",
        "leader.replication.throttled.replicas",
        "message.timestamp.difference.max.ms",
        "message.timestamp.type",
        "unclean.leader.election.enable",
        "min.insync.replicas",
    ],
)
def test_config_property_filter_default_exclusions(prop: str) -> None:
    assert not ConfigPropertyFilter().should_replicate_config_property(prop)


@pytest.mark.parametrize("prop", ["retention.ms", "cleanup.policy", "min.insync.replicas.extra", "minXinsyncXreplicas"])
def test_config_property_filter_replicates_others(prop: str) -> None:
    assert ConfigPropertyFilter().should_replicate_config_property(prop)


def test_config_properties_exclude_replaces_defaults_like_mm2() -> None:
    prop_filter = ConfigPropertyFilter(exclude=("retention\\..*",))
    assert not prop_filter.should_replicate_config_property("retention.ms")
    assert prop_filter.should_replicate_config_property("min.insync.replicas")
    everything = ConfigPropertyFilter(exclude=())
    assert everything.should_replicate_config_property("min.insync.replicas")


def test_source_defaults_come_from_the_target_unless_asked() -> None:
    assert not ConfigPropertyFilter().should_replicate_source_default("retention.ms")
    assert ConfigPropertyFilter(use_defaults_from="source").should_replicate_source_default("retention.ms")


# -- the whole topic decision ------------------------------------------------------------
def test_selector_replicates_heartbeats_even_when_filtered_out() -> None:
    selector = TopicSelector("A", "B", TopicFilter(include=("orders",)))
    assert selector.should_replicate_topic("orders")
    assert not selector.should_replicate_topic("payments")
    assert selector.should_replicate_topic("heartbeats")
    assert selector.should_replicate_topic("C.heartbeats")
    no_heartbeats = TopicSelector("A", "B", TopicFilter(include=("orders",)), heartbeats_replication_enabled=False)
    assert not no_heartbeats.should_replicate_topic("heartbeats")


def test_selector_never_replicates_internal_topics() -> None:
    selector = TopicSelector("A", "B", TopicFilter(include=(".*",), exclude=()))
    for topic in ("A.checkpoints.internal", "mm2-offset-syncs.B.internal", "__consumer_offsets", "x-internal"):
        assert not selector.should_replicate_topic(topic)


def test_selector_refuses_cycles_including_heartbeats() -> None:
    selector = TopicSelector("A", "B")
    assert not selector.should_replicate_topic("B.orders")
    assert not selector.should_replicate_topic("B.heartbeats")
    assert selector.should_replicate_topic("C.orders")
    assert selector.remote_topic("C.orders") == "A.C.orders"


def test_selector_with_identity_policy() -> None:
    selector = TopicSelector("A", "B", policy=IdentityReplicationPolicy(source_cluster_alias="A"))
    assert selector.should_replicate_topic("orders")
    assert selector.remote_topic("orders") == "orders"
    assert selector.remote_topic("heartbeats") == "A.heartbeats"


def test_checkpoints_follow_the_topic_filter_only() -> None:
    selector = TopicSelector("A", "B", TopicFilter(include=("orders",)), DefaultReplicationPolicy())
    assert selector.should_checkpoint_topic("orders")
    assert not selector.should_checkpoint_topic("payments")


def test_restore_history_copies_the_targets_own_topics_back_under_their_names() -> None:
    selector = TopicSelector("dr", "primary", TopicFilter(("orders",)), restore_history=True)
    assert selector.should_replicate_topic("primary.orders") and selector.remote_topic("primary.orders") == "orders"
    assert selector.should_checkpoint_topic("primary.orders")
    # dr's own topic still goes the usual way
    assert selector.should_replicate_topic("orders") and selector.remote_topic("orders") == "dr.orders"


@pytest.mark.parametrize("topic", [
    "primary.dr.orders",  # dr's records that went through primary: a cycle, not primary's history
    "other.primary.orders",  # came through another cluster
    "primary.heartbeats",
    "primary.mm2-offset-syncs.dr.internal",
])
def test_restore_history_restores_only_the_targets_own_local_topics(topic: str) -> None:
    everything = TopicSelector("dr", "primary", TopicFilter((".*",), ()), restore_history=True)
    assert everything.restored_topic(topic) is None
    assert not everything.should_replicate_topic(topic)


def test_restore_history_follows_the_topic_filter() -> None:
    selector = TopicSelector("dr", "primary", TopicFilter(("orders",)), restore_history=True)
    assert not selector.should_replicate_topic("primary.payments")
    assert not selector.should_checkpoint_topic("primary.payments")


def test_without_restore_history_the_cycle_rule_holds() -> None:
    selector = TopicSelector("dr", "primary", TopicFilter(("orders",)))
    assert not selector.should_replicate_topic("primary.orders")
    assert selector.restored_topic("primary.orders") is None
