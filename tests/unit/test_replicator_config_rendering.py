"""The replicator's configuration: example files, rendering back to MM2 properties, files."""

from __future__ import annotations

from pathlib import Path

import pytest

from mirrordrill.primitives.config_errors import ConfigError
from mirrordrill.replicator.config.flow import FlowConfig
from mirrordrill.replicator.config.loading import load_config
from mirrordrill.replicator.config.properties_reader import parse_mm2_properties
from mirrordrill.replicator.config.render import to_mm2_properties
from mirrordrill.replicator.config.settings import ReplicatorConfig
from tests.unit.replicator_config_helpers import EXAMPLES, HEAD, YAML_HEAD, line_of


def test_active_active_properties_equal_yaml() -> None:
    from_properties = load_config(EXAMPLES / "mm2-active-active.properties")
    from_yaml = load_config(EXAMPLES / "active-active.yaml")
    assert from_properties.model_dump() == from_yaml.model_dump()
    west_east = from_yaml.flow("west", "east")
    assert west_east.tasks_max == 4 and west_east.trigger_interval == "2 seconds"
    assert from_yaml.flow("east", "west").tasks_max == 2
    assert west_east.topics == ["orders", "payments\\..*"]
    assert from_yaml.spark_master == "local[4]"
    assert {w.key for w in from_properties.warnings} == {
        "offset.storage.replication.factor",
        "status.storage.replication.factor",
        "config.storage.replication.factor",
    }
    assert from_yaml.warnings == []


def test_active_passive_example() -> None:
    config = load_config(EXAMPLES / "mm2-active-passive.properties")
    assert [flow.name for flow in config.flows] == ["primary->backup"]
    flow = config.flows[0]
    assert flow.enabled and flow.sync_group_offsets_enabled
    assert flow.topics == ["orders.*", "payments", "inventory-.*"]
    assert (flow.replication_factor, flow.checkpoints_topic_replication_factor, flow.tasks_max) == (1, 1, 2)
    assert config.clusters["primary"].consumer == {"isolation.level": "read_committed"}
    assert config.client_config(flow, "target_producer")["compression.type"] == "zstd"


@pytest.mark.parametrize(
    "name", ["mm2-active-active.properties", "mm2-active-passive.properties", "active-active.yaml"]
)
def test_examples_round_trip_through_mm2_properties(name: str) -> None:
    config = load_config(EXAMPLES / name)
    rendered = to_mm2_properties(config)
    assert parse_mm2_properties(rendered, "rendered.properties").model_dump() == config.model_dump()


def test_rendering_writes_shared_values_once_at_top_level() -> None:
    config = load_config(EXAMPLES / "mm2-active-active.properties")
    lines = to_mm2_properties(config).splitlines()
    assert "replication.factor = 1" in lines
    assert "heartbeats.topic.replication.factor = 1" in lines
    assert "west->east.tasks.max = 4" in lines and "east->west.tasks.max = 2" in lines
    assert "east->west.enabled = true" in lines
    assert "offset.storage.replication.factor = 1" in lines
    assert not any(line.startswith("tasks.max") for line in lines)


def test_rendering_without_mirrordrill_knobs() -> None:
    config = load_config(EXAMPLES / "mm2-active-active.properties")
    rendered = to_mm2_properties(config, include_mirrordrill=False)
    assert "mirrordrill" not in rendered.replace("rendered by mirrordrill", "")
    back = parse_mm2_properties(rendered, "mm2.properties")
    assert back.spark_master == "local[*]"
    assert back.flows[0].max_offsets_per_trigger is None
    assert back.flows[0].topics == config.flows[0].topics


def test_tricky_configuration_round_trips() -> None:
    config = ReplicatorConfig(
        clusters={
            "dc-1": {
                "bootstrap_servers": ["h1:9092", "h2:9092"],
                "client": {
                    "security.protocol": "SASL_SSL",
                    "sasl.jaas.config": 'x required username="a b" password="p=w:d#!";',
                },
                "consumer": {"client.rack": "eu-west-1a", "group.instance.id": "r\u00e9plica"},
            },
            "dc_2": {"bootstrap_servers": ["h3:9092"], "mm2_only": {"offset.storage.topic": "mm2-offsets"}},
            "dc3": {"bootstrap_servers": ["h4:9092"]},
        },
        flows=[
            FlowConfig(
                source="dc-1",
                target="dc_2",
                topics=["orders\\.v[0-9]+", "payments"],
                topics_exclude=[],
                groups_exclude=["tmp"],
                replication_policy_class="identity",
                replication_policy_separator="#",
                config_properties_exclude=["retention\\.ms"],
                starting_offsets="latest",
                mode="realtime",
                trigger_interval="10 minutes",
                producer={"acks": "all"},
                mm2_only={"errors.tolerance": "none"},
            ),
            FlowConfig(source="dc_2", target="dc-1", enabled=False, checkpoint_dir="/tmp/c d"),
            FlowConfig(source="dc3", target="dc-1", max_offsets_per_trigger=10, sync_group_offsets_enabled=True),
        ],
        client={"ssl.endpoint.identification.algorithm": ""},
        spark_master="spark://m:7077",
        checkpoint_dir="/var/lib/mirrordrill",
        mm2_only={"config.providers": "file"},
    )
    rendered = to_mm2_properties(config)
    assert rendered.isascii()
    assert "dc-1->dc_2.consumer.auto.offset.reset = latest" in rendered
    assert "org.apache.kafka.connect.mirror.IdentityReplicationPolicy" in rendered
    back = parse_mm2_properties(rendered, "rendered.properties")
    assert back.model_dump() == config.model_dump()
    assert [w.key for w in back.warnings] == [
        "config.providers",
        "dc_2.offset.storage.topic",
        "dc-1->dc_2.errors.tolerance",
    ]


def test_programmatic_models_validate_too() -> None:
    with pytest.raises(ValueError, match="onto itself"):
        FlowConfig(source="A", target="A")
    with pytest.raises(ValueError, match="not declared"):
        ReplicatorConfig(clusters={"A": {"bootstrap_servers": ["a:1"]}}, flows=[FlowConfig(source="A", target="B")])
    with pytest.raises(ValueError, match="starting_offsets"):
        FlowConfig(source="A", target="B", consumer={"auto.offset.reset": "latest"})
    assert (
        FlowConfig(
            source="A", target="B", replication_policy_class="IdentityReplicationPolicy"
        ).replication_policy_class
        == "identity"
    )


# ======================================================================================
# Files
# ======================================================================================
def test_load_config_detects_format_and_reads_properties_as_latin1(tmp_path: Path) -> None:
    properties = tmp_path / "mm2.properties"
    properties.write_bytes(HEAD.encode() + b"A->B.topics = caf\xe9\n")
    config = load_config(properties)
    assert config.flows[0].topics == ["caf\u00e9"]
    yml = tmp_path / "r.yml"
    yml.write_text(YAML_HEAD, encoding="utf-8")
    assert load_config(yml).flows[0].name == "A->B"
    other = tmp_path / "mm2.conf"
    other.write_text(HEAD)
    with pytest.raises(ConfigError, match=r"\.properties.*\.yaml"):
        load_config(other)


def test_error_line_numbers_match_the_file(tmp_path: Path) -> None:
    text = HEAD + "\n# flows\nA->B.enabled = true\nA->B.offset.lag.max = -5\n"
    path = tmp_path / "x.properties"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.source == str(path)
    assert info.value.line == line_of(text, "offset.lag.max")
