"""A flow's Kafka client settings as its Spark query gets them."""

from __future__ import annotations

from pathlib import Path

from replicator.spark_stream import MICROBATCH_CONSUMER_DEFAULTS, SAFE_PRODUCER_DEFAULTS, StreamPlan


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
