"""The replicator's configuration: every supported key, its MM2 default, and overrides."""

from __future__ import annotations

from typing import Any

import pytest

from mirrordrill.replicator.config.flow import FlowConfig
from mirrordrill.replicator.config.mm2_keys import FLOW_PROPERTY_KEYS
from mirrordrill.replicator.policy import DefaultReplicationPolicy, IdentityReplicationPolicy
from tests.unit.replicator_config_helpers import MM2_DEFAULTS, props

# A non-default properties value for every key, and the model value it must become.
NON_DEFAULTS: dict[str, tuple[str, Any]] = {
    "enabled": ("true", True),
    "topics": ("orders.*, payments", ["orders.*", "payments"]),
    "topics.exclude": ("tmp-.*", ["tmp-.*"]),
    "groups": ("billing", ["billing"]),
    "groups.exclude": ("", []),
    "replication.policy.class": ("org.apache.kafka.connect.mirror.IdentityReplicationPolicy", "identity"),
    "replication.policy.separator": ("_", "_"),
    "replication.policy.internal.topic.separator.enabled": ("false", False),
    "sync.topic.configs.enabled": ("false", False),
    "sync.topic.configs.interval.seconds": ("30", 30),
    "config.properties.exclude": ("retention\\\\..*", ["retention\\..*"]),
    "use.defaults.from": ("source", "source"),
    "refresh.topics.enabled": ("FALSE", False),
    "refresh.topics.interval.seconds": ("15", 15),
    "refresh.groups.enabled": ("false", False),
    "refresh.groups.interval.seconds": ("-1", -1),
    "emit.checkpoints.enabled": ("true", True),
    "emit.checkpoints.interval.seconds": ("5", 5),
    "sync.group.offsets.enabled": ("true", True),
    "sync.group.offsets.interval.seconds": ("7", 7),
    "emit.heartbeats.enabled": ("false", False),
    "emit.heartbeats.interval.seconds": ("10", 10),
    "heartbeats.replication.enabled": ("false", False),
    "emit.offset-syncs.enabled": ("true", True),
    "offset-syncs.topic.location": ("target", "target"),
    "offset.lag.max": ("0", 0),
    "replication.factor": ("1", 1),
    "checkpoints.topic.replication.factor": ("1", 1),
    "heartbeats.topic.replication.factor": ("-1", -1),
    "offset-syncs.topic.replication.factor": ("1", 1),
    "tasks.max": ("8", 8),
    "consumer.poll.timeout.ms": ("250", 250),
    "admin.timeout.ms": ("+5000", 5000),
    "mirrordrill.mode": ("realtime", "realtime"),
    "mirrordrill.max.offsets.per.trigger": ("1000", 1000),
    "mirrordrill.trigger.interval": ("30 seconds", "30 seconds"),
    "mirrordrill.provenance.header": ("false", False),
    "mirrordrill.checkpoint.dir": ("/data/ckpt/a-b", "/data/ckpt/a-b"),
    "mirrordrill.restore.history": ("true", True),
    "mirrordrill.transactional": ("true", True),
    "mirrordrill.transaction.commit.interval.ms": ("250", 250),
    "mirrordrill.transactional.id.prefix": ("drill-7-", "drill-7-"),
    "mirrordrill.trace.records": ("true", True),
}


def test_every_registered_key_is_covered() -> None:
    assert set(NON_DEFAULTS) == set(FLOW_PROPERTY_KEYS)
    assert set(MM2_DEFAULTS) | {"source", "target", "enabled"} == set(FlowConfig.model_fields)


def test_defaults_are_mm2_defaults() -> None:
    flow = props("A->B.enabled = true\n").flows[0]
    for name, expected in MM2_DEFAULTS.items():
        assert getattr(flow, name) == expected, name


@pytest.mark.parametrize("key", sorted(NON_DEFAULTS))
def test_every_flow_key_per_flow(key: str) -> None:
    raw, expected = NON_DEFAULTS[key]
    body = f"A->B.{key} = {raw}\n"
    if key == "mirrordrill.mode":
        body += "A->B.mirrordrill.trigger.interval = 1 minute\n"
    if key == "mirrordrill.max.offsets.per.trigger":
        body += "A->B.mirrordrill.mode = microbatch\n"
    flow = props(body).flow("A", "B")
    assert getattr(flow, FLOW_PROPERTY_KEYS[key]) == expected


@pytest.mark.parametrize("key", sorted(set(NON_DEFAULTS) - {"enabled", "mirrordrill.checkpoint.dir"}))
def test_every_flow_key_as_top_level_default(key: str) -> None:
    raw, expected = NON_DEFAULTS[key]
    config = props(f"{key} = {raw}\nA->B.enabled = true\nB->A.enabled = true\n")
    for flow in config.flows:
        assert getattr(flow, FLOW_PROPERTY_KEYS[key]) == expected


def test_per_flow_values_override_top_level() -> None:
    config = props(
        "tasks.max = 2\ntopics = orders\nA->B.enabled = true\nB->A.enabled = true\n"
        "A->B.tasks.max = 4\nB->A.topics = payments, refunds\n"
    )
    assert config.flow("A", "B").tasks_max == 4
    assert config.flow("A", "B").topics == ["orders"]
    assert config.flow("B", "A").tasks_max == 2
    assert config.flow("B", "A").topics == ["payments", "refunds"]


def test_flows_are_disabled_unless_enabled_like_mm2() -> None:
    config = props("A->B.topics = orders\nB->A.enabled = true\n")
    assert not config.flow("A", "B").enabled
    assert config.flow("B", "A").enabled
    assert [flow.name for flow in config.enabled_flows()] == ["B->A"]


def test_properties_without_flows() -> None:
    config = props()
    assert config.flows == []
    assert list(config.clusters) == ["A", "B"]
    assert config.clusters["A"].bootstrap_servers == ["a1:9092", "a2:9092"]


@pytest.mark.parametrize(
    "name",
    [
        "default",
        "identity",
        "DefaultReplicationPolicy",
        "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
        "org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
    ],
)
def test_replication_policy_names(name: str) -> None:
    flow = props(f"replication.policy.class = {name}\nA->B.enabled = true\n").flows[0]
    expected = "identity" if "dentity" in name else "default"
    assert flow.replication_policy_class == expected
    policy = flow.replication_policy()
    assert type(policy) is (IdentityReplicationPolicy if expected == "identity" else DefaultReplicationPolicy)


def test_flow_helpers() -> None:
    flow = props(
        "A->B.enabled = true\nA->B.tasks.max = 3\nA->B.topics = orders\n"
        "A->B.replication.policy.separator = _\nA->B.refresh.groups.interval.seconds = -1\n"
        "A->B.sync.topic.configs.enabled = false\n"
    ).flows[0]
    assert flow.name == "A->B"
    assert flow.num_streams == 3
    assert flow.effective_trigger_interval == "0 seconds"
    assert flow.trigger_interval_seconds == 0
    assert flow.schedule_seconds("refresh_topics") == 600
    assert flow.schedule_seconds("refresh_groups") is None  # negative interval disables, as in MM2
    assert flow.schedule_seconds("sync_topic_configs") is None
    assert flow.schedule_seconds("sync_group_offsets") is None
    selector = flow.topic_selector()
    assert selector.should_replicate_topic("orders")
    assert not selector.should_replicate_topic("B_orders")
    assert selector.remote_topic("orders") == "A_orders"
    assert flow.group_filter().should_replicate_group("billing")
    assert not flow.config_property_filter().should_replicate_config_property("min.insync.replicas")


def test_realtime_trigger_default() -> None:
    flow = props("A->B.mirrordrill.mode = realtime\n").flows[0]
    assert flow.effective_trigger_interval == "5 minutes"
    assert flow.trigger_interval_seconds == 300


def test_metrics_port_is_process_wide_off_by_default_and_a_tcp_port() -> None:
    from mirrordrill.replicator.config.render import to_mm2_properties
    from tests.unit.replicator_config_helpers import props_error

    assert props().metrics_port is None
    assert props("mirrordrill.metrics.port = 0\n").metrics_port == 0
    config = props("mirrordrill.metrics.port = 9464\n")
    assert config.metrics_port == 9464
    assert "mirrordrill.metrics.port = 9464" in to_mm2_properties(config)
    assert "65535" in str(props_error("mirrordrill.metrics.port = 70000\n"))
    assert "whole number" in str(props_error("mirrordrill.metrics.port = x\n"))
    assert "set once" in str(props_error("A->B.mirrordrill.metrics.port = 1\n"))


def test_the_driver_jit_is_process_wide_by_the_flows_mode_by_default_and_one_of_two() -> None:
    from mirrordrill.replicator.config.render import to_mm2_properties
    from mirrordrill.replicator.driver_jvm import driver_jit_for
    from tests.unit.replicator_config_helpers import props_error

    assert props().driver_jit is None
    assert driver_jit_for(None, ["microbatch", "microbatch"]) == "tiered"
    assert driver_jit_for(None, ["realtime"]) == "c1"
    assert driver_jit_for(None, ["microbatch", "realtime"]) == "c1"  # a real-time flow's start wins
    assert driver_jit_for(None, []) == "c1"
    assert driver_jit_for("c1", ["microbatch"]) == "c1" and driver_jit_for("tiered", ["realtime"]) == "tiered"
    config = props("mirrordrill.driver.jit = tiered\n")
    assert config.driver_jit == "tiered"
    assert "mirrordrill.driver.jit = tiered" in to_mm2_properties(config)
    assert "mirrordrill.driver.jit" not in to_mm2_properties(props())  # the default is not written out
    error = str(props_error("mirrordrill.driver.jit = c2\n"))
    assert "'c1'" in error and "'tiered'" in error
    assert "set once" in str(props_error("A->B.mirrordrill.driver.jit = tiered\n"))
    from mirrordrill.replicator.config.yaml_reader import parse_yaml
    from tests.unit.replicator_config_helpers import YAML_HEAD, yaml_error

    assert parse_yaml(YAML_HEAD + "driver_jit: tiered\n", "replicator.yaml").driver_jit == "tiered"
    assert "'tiered'" in str(yaml_error(YAML_HEAD + "driver_jit: fast\n"))


def test_restore_history_needs_names_to_restore() -> None:
    with pytest.raises(Exception, match="identity names are never renamed"):
        FlowConfig(source="a", target="b", restore_history=True, replication_policy_class="identity")
    assert FlowConfig(source="a", target="b", restore_history=True).topic_selector().restore_history
