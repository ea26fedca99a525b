"""The stream plan a flow hands to Spark: built without Spark, so a wrong field shows here first."""

from __future__ import annotations

from pathlib import Path

from mirrordrill.replicator.filters import TopicFilter, TopicSelector
from mirrordrill.replicator.policy import DefaultReplicationPolicy
from mirrordrill.replicator.spark_stream import MICROBATCH_CONSUMER_DEFAULTS, SAFE_PRODUCER_DEFAULTS, StreamPlan


def _plan(**kw) -> StreamPlan:
    return StreamPlan(name="a->b", source_alias="a", target_alias="b", source_bootstrap="a:9092",
                      target_bootstrap="b:9092", topics=("t",), remote_topic_prefix="a.",
                      checkpoint_dir=Path("/c"), metrics_dir=Path("/m"), **kw)


def test_micro_batch_polls_in_large_steps_and_the_flow_can_say_otherwise():
    got = _plan(mode="microbatch").consumer_settings()
    assert got["max.poll.records"] == "5000" and got["max.partition.fetch.bytes"] == str(8 << 20)
    mine = _plan(mode="microbatch", consumer={"max.poll.records": "500", "fetch.min.bytes": "1"}).consumer_settings()
    assert mine == {**MICROBATCH_CONSUMER_DEFAULTS, "max.poll.records": "500", "fetch.min.bytes": "1"}


def test_real_time_keeps_kafkas_consumer_defaults():
    assert _plan(mode="realtime").consumer_settings() == {}


def test_settings_spark_owns_never_reach_the_query():
    plan = _plan(mode="realtime", consumer={"group.id": "g", "auto.offset.reset": "latest"},
                 producer={"bootstrap.servers": "x:1", "linger.ms": "20"})
    assert plan.consumer_settings() == {}
    assert plan.producer_settings() == {**SAFE_PRODUCER_DEFAULTS, "linger.ms": "20"}


def test_a_restore_plan_names_every_selected_topic_as_the_selector_does() -> None:
    policy = DefaultReplicationPolicy()
    selector = TopicSelector("east", "west", TopicFilter(include=("orders", "billing")), policy, restore_history=True)
    topics = tuple(t for t in ("orders", "billing", "west.orders", "west.billing", "west.other", "audit")
                   if selector.should_replicate_topic(t))
    plan = StreamPlan(name="east->west", source_alias="east", target_alias="west",
                      source_bootstrap="127.0.0.1:1", target_bootstrap="127.0.0.1:2", topics=topics,
                      remote_topic_prefix=policy.format_remote_topic("east", ""), checkpoint_dir=Path("cp"),
                      metrics_dir=Path("m"), restored_prefix=policy.format_remote_topic("west", ""))
    assert set(topics) == {"orders", "billing", "west.orders", "west.billing"}
    # the names the sink's warm-up asks the target about (transform() writes the same rule as a
    # Spark expression: a restored copy loses the target's prefix)
    assert dict(zip(topics, plan.remote_topics(), strict=True)) == {t: selector.remote_topic(t) for t in topics}
    assert "orders" in plan.remote_topics() and "east.orders" in plan.remote_topics()
