"""The replicator's configuration: MM2 properties, YAML, validation and rendering back to MM2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from replicator.config import (
    FLOW_PROPERTY_KEYS,
    ConfigError,
    FlowConfig,
    ReplicatorConfig,
    load_config,
    parse_mm2_list,
    parse_mm2_properties,
    parse_yaml,
    read_properties,
    to_mm2_properties,
)
from replicator.filters import DEFAULT_CONFIG_PROPERTIES_EXCLUDE, DEFAULT_GROUPS_EXCLUDE, DEFAULT_TOPICS_EXCLUDE
from replicator.policy import DefaultReplicationPolicy, IdentityReplicationPolicy

EXAMPLES = Path(__file__).resolve().parents[2] / "replicator" / "examples"

HEAD = """\
clusters = A, B
A.bootstrap.servers = a1:9092, a2:9092
B.bootstrap.servers = b1:9092
"""

YAML_HEAD = """\
clusters:
  A:
    bootstrap_servers: [a1:9092, a2:9092]
  B:
    bootstrap_servers: b1:9092
flows:
  - source: A
    target: B
"""


def props(body: str = "", head: str = HEAD) -> ReplicatorConfig:
    return parse_mm2_properties(head + body, "mm2.properties")


def props_error(body: str, head: str = HEAD) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_mm2_properties(head + body, "mm2.properties")
    return info.value


def yaml_error(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_yaml(text, "replicator.yaml")
    return info.value


def line_of(text: str, needle: str) -> int:
    return next(number for number, line in enumerate(text.splitlines(), 1) if needle in line)


# ======================================================================================
# Java properties syntax
# ======================================================================================
def test_properties_separators_and_comments() -> None:
    text = "# comment\n! also a comment\n\na=1\nb: 2\nc 3\nd = 4\ne\t=\t5\nf =\ng\n  h   =   spaced value   \n"
    lines = {p.key: (p.value, p.line) for p in read_properties(text)}
    assert lines == {
        "a": ("1", 4),
        "b": ("2", 5),
        "c": ("3", 6),
        "d": ("4", 7),
        "e": ("5", 8),
        "f": ("", 9),
        "g": ("", 10),
        "h": ("spaced value   ", 11),  # Java keeps trailing whitespace; ConfigDef trims later
    }


def test_properties_separator_rules() -> None:
    lines = {p.key: p.value for p in read_properties("k1 = = v\nk2 :v\nk3  v:w\nk4=a=b\n")}
    assert lines == {"k1": "= v", "k2": "v", "k3": "v:w", "k4": "a=b"}


def test_properties_continuation_lines() -> None:
    text = "topics = orders, \\\n    payments, \\\n\t  refunds\nnext = 1\n"
    lines = read_properties(text)
    assert [(p.key, p.value, p.line) for p in lines] == [
        ("topics", "orders, payments, refunds", 1),
        ("next", "1", 4),
    ]


def test_properties_continuation_details() -> None:
    # An even number of trailing backslashes is an escaped backslash, not a continuation.
    assert [(p.key, p.value) for p in read_properties("a = x\\\\\nb = y\n")] == [("a", "x\\"), ("b", "y")]
    # A comment line never continues; a continued line never starts a comment.
    lines = read_properties("# c \\\na = 1\\\n# not a comment\n")
    assert [(p.key, p.value, p.line) for p in lines] == [("a", "1# not a comment", 2)]
    # A blank line ends a continuation; a backslash at the end of the file is dropped.
    assert [(p.key, p.value) for p in read_properties("a = 1\\\n\nb = 2\\")] == [("a", "1"), ("b", "2")]


def test_properties_escapes() -> None:
    text = "key\\ with\\ spaces = v\nk\\=e\\:y = tab\\there\\nnew\\u0041\\u00e9\nback = c:\\\\dir\n"
    lines = {p.key: p.value for p in read_properties(text)}
    assert lines == {"key with spaces": "v", "k=e:y": "tab\there\nnewAé", "back": "c:\\dir"}


def test_properties_line_endings() -> None:
    lines = read_properties("a=1\r\nb=2\rc=3\n")
    assert [(p.key, p.line) for p in lines] == [("a", 1), ("b", 2), ("c", 3)]


def test_properties_malformed_unicode_escape() -> None:
    with pytest.raises(ConfigError, match=r"line 2.*\\u"):
        read_properties("a = 1\nb = \\u12\n", "x.properties")


def test_mm2_list_syntax() -> None:
    assert parse_mm2_list(" a , b,c ") == ["a", "b", "c"]
    assert parse_mm2_list("   ") == []
    assert parse_mm2_list("a,,b") == ["a", "", "b"]


# ======================================================================================
# Every supported key, its default, and overrides
# ======================================================================================
MM2_DEFAULTS: dict[str, Any] = {
    "topics": [".*"],
    "topics_exclude": list(DEFAULT_TOPICS_EXCLUDE),
    "groups": [".*"],
    "groups_exclude": list(DEFAULT_GROUPS_EXCLUDE),
    "replication_policy_class": "default",
    "replication_policy_separator": ".",
    "replication_policy_internal_topic_separator_enabled": True,
    "sync_topic_configs_enabled": True,
    "sync_topic_configs_interval_seconds": 600,
    "config_properties_exclude": list(DEFAULT_CONFIG_PROPERTIES_EXCLUDE),
    "use_defaults_from": "target",
    "refresh_topics_enabled": True,
    "refresh_topics_interval_seconds": 600,
    "refresh_groups_enabled": True,
    "refresh_groups_interval_seconds": 600,
    "emit_checkpoints_enabled": True,
    "emit_checkpoints_interval_seconds": 60,
    "sync_group_offsets_enabled": False,
    "sync_group_offsets_interval_seconds": 60,
    "emit_heartbeats_enabled": True,
    "emit_heartbeats_interval_seconds": 1,
    "heartbeats_replication_enabled": True,
    "emit_offset_syncs_enabled": True,
    "offset_syncs_topic_location": "source",
    "offset_lag_max": 100,
    "replication_factor": 2,
    "checkpoints_topic_replication_factor": 3,
    "heartbeats_topic_replication_factor": 3,
    "offset_syncs_topic_replication_factor": 3,
    "tasks_max": 1,
    "consumer_poll_timeout_ms": 1000,
    "admin_timeout_ms": 60000,
    "consumer": {},
    "producer": {},
    "admin": {},
    "mm2_only": {},
    "mode": "microbatch",
    "max_offsets_per_trigger": None,
    "trigger_interval": None,
    "starting_offsets": None,
    "checkpoint_dir": None,
    "provenance_header": True,
}

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
    assert flow.effective_trigger_interval == "10 seconds"
    assert flow.trigger_interval_seconds == 10


# ======================================================================================
# Clusters and client settings
# ======================================================================================
def test_client_override_prefixes() -> None:
    config = props(
        "security.protocol = SASL_SSL\n"
        "sasl.mechanism = SCRAM-SHA-512\n"
        "A.ssl.truststore.location = /etc/a.jks\n"
        "A.security.protocol = SSL\n"
        "A.consumer.isolation.level = read_committed\n"
        "A.consumer.max.poll.records = 500\n"
        "B.producer.compression.type = zstd\n"
        "B.admin.request.timeout.ms = 9000\n"
        "A->B.enabled = true\n"
        "A->B.consumer.max.poll.records = 100\n"
        "A->B.consumer.fetch.min.bytes = 1024\n"
        "A->B.producer.linger.ms = 20\n"
        "A->B.producer.compression.type = lz4\n"
    )
    a, b, flow = config.clusters["A"], config.clusters["B"], config.flows[0]
    assert config.client == {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512"}
    assert a.client == {"ssl.truststore.location": "/etc/a.jks", "security.protocol": "SSL"}
    assert a.consumer == {"isolation.level": "read_committed", "max.poll.records": "500"}
    assert b.producer == {"compression.type": "zstd"}
    assert b.admin == {"request.timeout.ms": "9000"}
    assert flow.consumer == {"max.poll.records": "100", "fetch.min.bytes": "1024"}
    assert flow.producer == {"linger.ms": "20", "compression.type": "lz4"}

    # MM2's precedence: flow < top-level client < cluster client < cluster consumer/producer.
    assert config.client_config(flow, "source_consumer") == {
        "bootstrap.servers": "a1:9092,a2:9092",
        "security.protocol": "SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "ssl.truststore.location": "/etc/a.jks",
        "isolation.level": "read_committed",
        "max.poll.records": "500",
        "fetch.min.bytes": "1024",
        "enable.auto.commit": "false",
        "auto.offset.reset": "earliest",
    }
    assert config.client_config(flow, "target_producer") == {
        "bootstrap.servers": "b1:9092",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "linger.ms": "20",
        "compression.type": "zstd",
    }
    assert config.client_config(flow, "target_admin")["request.timeout.ms"] == "9000"
    assert config.client_config(flow, "target_consumer")["auto.offset.reset"] == "earliest"


def test_admin_and_consumer_mm2_keys_are_not_client_settings() -> None:
    flow = props("A->B.consumer.poll.timeout.ms = 250\nA->B.admin.timeout.ms = 1000\n").flows[0]
    assert flow.consumer_poll_timeout_ms == 250
    assert flow.admin_timeout_ms == 1000
    assert flow.consumer == {} and flow.admin == {}


def test_starting_offsets_from_consumer_settings() -> None:
    config = props("A->B.consumer.auto.offset.reset = latest\nB->A.enabled = true\n")
    assert config.flow("A", "B").starting_offsets == "latest"
    assert config.flow("A", "B").consumer == {}
    assert config.starting_offsets(config.flow("A", "B")) == "latest"
    assert config.starting_offsets(config.flow("B", "A")) == "earliest"
    cluster_wide = props("A.consumer.auto.offset.reset = latest\nA->B.enabled = true\n")
    assert cluster_wide.flows[0].starting_offsets is None
    assert cluster_wide.starting_offsets(cluster_wide.flows[0]) == "latest"
    assert cluster_wide.client_config(cluster_wide.flows[0], "source_consumer")["auto.offset.reset"] == "latest"


def test_starting_offsets_contradictions() -> None:
    error = props_error(
        "A.consumer.auto.offset.reset = latest\nA->B.enabled = true\nA->B.consumer.auto.offset.reset = earliest\n"
    )
    assert error.line == 6 and error.key == "A->B.consumer.auto.offset.reset"
    assert "latest" in error.valid
    error = props_error("A->B.consumer.auto.offset.reset = none\n")
    assert error.line == 4 and "earliest, latest" in error.valid
    error = yaml_error(YAML_HEAD + "    starting_offsets: latest\n    consumer: {auto.offset.reset: earliest}\n")
    assert error.line == 10 and error.key == "flows[0].consumer.auto.offset.reset"


def test_mm2_only_settings_are_kept_and_warned_about() -> None:
    text = (
        "offset.storage.replication.factor = 1\n"
        "B.status.storage.replication.factor = 1\n"
        "B.exactly.once.source.support = enabled\n"
        "dedicated.mode.enable.internal.rest = true\n"
        "A->B.sync.topic.acls.enabled = false\n"
        "key.converter = org.apache.kafka.connect.converters.ByteArrayConverter\n"
        "A->B.topic.filter.class = org.apache.kafka.connect.mirror.DefaultTopicFilter\n"
    )
    config = props(text)
    assert config.mm2_only == {"offset.storage.replication.factor": "1", "dedicated.mode.enable.internal.rest": "true"}
    assert config.clusters["B"].mm2_only == {
        "status.storage.replication.factor": "1",
        "exactly.once.source.support": "enabled",
    }
    assert config.flows[0].mm2_only == {"sync.topic.acls.enabled": "false"}
    warned = {(w.key, w.line) for w in config.warnings}
    assert warned == {
        ("offset.storage.replication.factor", 4),
        ("B.status.storage.replication.factor", 5),
        ("B.exactly.once.source.support", 6),
        ("dedicated.mode.enable.internal.rest", 7),
        ("A->B.sync.topic.acls.enabled", 8),
    }
    assert any("ACL" in w.message for w in config.warnings)
    assert "mm2.properties, line 4: offset.storage.replication.factor:" in str(config.warnings[0])


def test_config_provider_references_are_warned_about() -> None:
    config = props(
        "config.providers = file\n"
        "config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider\n"
        "A.sasl.jaas.config = ${file:/etc/mm2/secrets.properties:jaas}\n"
    )
    assert config.clusters["A"].client["sasl.jaas.config"] == "${file:/etc/mm2/secrets.properties:jaas}"
    placeholder = [w for w in config.warnings if w.key == "A.sasl.jaas.config"]
    assert len(placeholder) == 1 and placeholder[0].line == 6
    assert "config.providers" in placeholder[0].message


def test_properties_pitfalls_are_warned_about() -> None:
    config = props(
        "A->B.topics = orders\\.v1\n"
        "A->B.groups = billing   # our team\n"
        "tasks.max = 1\n"
        "tasks.max = 2\n"
        "A->B.topics.exclude = caf\u00e9\n"
    )
    messages = {(w.key, w.line): w.message for w in config.warnings}
    assert "drops the backslash" in messages[("A->B.topics", 4)]
    assert config.flows[0].topics == ["orders.v1"]  # what MM2 gets too
    assert "end-of-line comments" in messages[("A->B.groups", 5)]
    assert "repeats line 6" in messages[("tasks.max", 7)]
    assert config.flows[0].tasks_max == 2
    assert "ISO-8859-1" in messages[("A->B.topics.exclude", 8)]


# ======================================================================================
# Errors: file, line, key, what is valid
# ======================================================================================
def test_error_message_names_file_line_key_and_valid() -> None:
    error = props_error("A->B.enabled = true\nA->B.topcis = orders\n")
    assert (error.source, error.line, error.key) == ("mm2.properties", 5, "A->B.topcis")
    assert error.suggestions[0] == "A->B.topics"
    text = str(error)
    assert text.startswith("mm2.properties, line 5: A->B.topcis: unknown key")
    assert "did you mean 'A->B.topics'" in text and "valid:" in text


@pytest.mark.parametrize(
    ("body", "key", "suggestion"),
    [
        ("replication.factr = 1\n", "replication.factr", "replication.factor"),
        ("A->B.emit.heartbeats = false\n", "A->B.emit.heartbeats", "A->B.emit.heartbeats.enabled"),
        (
            "A->B.sync.group.offset.enabled = true\n",
            "A->B.sync.group.offset.enabled",
            "A->B.sync.group.offsets.enabled",
        ),
        ("A.bootstrap.server = x:1\n", "A.bootstrap.server", "A.bootstrap.servers"),
        ("A.consumr.max.poll.records = 5\n", "A.consumr.max.poll.records", "A.consumer.max.poll.records"),
        ("A.topics = orders\n", "A.topics", "A->B.topics"),
        ("mirrordrill.spark.mastr = local[2]\n", "mirrordrill.spark.mastr", "mirrordrill.spark.master"),
        (
            "offset.storag.replication.factor = 1\n",
            "offset.storag.replication.factor",
            "offset.storage.replication.factor",
        ),
    ],
)
def test_unknown_keys_with_suggestions(body: str, key: str, suggestion: str) -> None:
    error = props_error(body)
    assert error.line == 4
    assert error.key == key
    assert suggestion in error.suggestions
    assert error.valid


@pytest.mark.parametrize(
    ("body", "key"),
    [
        ("C.bootstrap.servers = c:9092\n", "C.bootstrap.servers"),
        ("C.consumer.max.poll.records = 5\n", "C.consumer.max.poll.records"),
        ("A->C.enabled = true\n", "A->C.enabled"),
        ("C->A.enabled = true\n", "C->A.enabled"),
    ],
)
def test_unknown_cluster(body: str, key: str) -> None:
    error = props_error(body)
    assert (error.line, error.key) == (4, key)
    assert "'C' is not in clusters = A, B" in error.problem
    assert "A, B" in error.valid


def test_unknown_cluster_suggests_close_alias() -> None:
    error = props_error(
        "east->wset.enabled = true\n", "clusters = east, west\neast.bootstrap.servers=e:1\nwest.bootstrap.servers=w:1\n"
    )
    assert error.suggestions == ("west",)


def test_cluster_without_bootstrap_servers() -> None:
    error = props_error("", "# clusters\nclusters = A, B\nA.bootstrap.servers = a:1\n")
    assert (error.line, error.key) == (2, "B.bootstrap.servers")
    assert "no bootstrap servers" in error.problem
    error = props_error("", "clusters = A, B\nA.bootstrap.servers = a:1\nB.bootstrap.servers =\n")
    assert (error.line, error.key) == (3, "B.bootstrap.servers")
    error = yaml_error("clusters:\n  A: {bootstrap_servers: a:1}\n  B: {}\n")
    assert (error.line, error.key) == (3, "clusters.B.bootstrap_servers")


def test_missing_clusters() -> None:
    with pytest.raises(ConfigError, match="clusters = A, B"):
        parse_mm2_properties("A.bootstrap.servers = a:1\n", "x.properties")
    with pytest.raises(ConfigError) as info:
        parse_mm2_properties("clusters = A, A\n", "x.properties")
    assert info.value.line == 1 and "twice" in info.value.problem


def test_end_of_line_comment_in_clusters_is_explained() -> None:
    error = props_error("", "clusters = us-west, us-east   # defines cluster aliases\n")
    assert error.line == 1 and "end-of-line comments" in error.problem


@pytest.mark.parametrize(
    ("body", "key", "words"),
    [
        ("A->A.enabled = true\n", "A->A.enabled", "onto itself"),
        (
            "A->B.mirrordrill.mode = realtime\nA->B.mirrordrill.max.offsets.per.trigger = 5\n",
            "A->B.mirrordrill.max.offsets.per.trigger",
            "real-time",
        ),
        (
            "mirrordrill.mode = realtime\nA->B.mirrordrill.max.offsets.per.trigger = 5\n",
            "A->B.mirrordrill.max.offsets.per.trigger",
            "real-time",
        ),
        ("A->B.emit.offset-syncs.enabled = false\n", "A->B.emit.offset-syncs.enabled", "offset syncs"),
        (
            "A->B.sync.group.offsets.enabled = true\nA->B.emit.checkpoints.enabled = false\n",
            "A->B.sync.group.offsets.enabled",
            "checkpoints",
        ),
        ("A->B.emit.checkpoints.interval.seconds = 0\n", "A->B.emit.checkpoints.interval.seconds", "0 seconds"),
        ("A->B.replication.factor = 0\n", "A->B.replication.factor", "replication factor"),
        ("A->B.tasks.max = 0\n", "A->B.tasks.max", "greater than or equal to 1"),
        ("A->B.tasks.max = two\n", "A->B.tasks.max", "whole number"),
        ("A->B.enabled = yes\n", "A->B.enabled", "true or false"),
        ("A->B.mirrordrill.mode = continuous\n", "A->B.mirrordrill.mode", "'microbatch' or 'realtime'"),
        ("A->B.mirrordrill.trigger.interval = soon\n", "A->B.mirrordrill.trigger.interval", "trigger interval"),
        ("A->B.topics = orders, (\n", "A->B.topics", "invalid regex"),
        ("A->B.topics = a,,b\n", "A->B.topics", "empty"),
        ("A->B.replication.policy.class = com.acme.Policy\n", "A->B.replication.policy.class", "unsupported"),
        ("A->B.replication.policy.separator = A\n", "A->B.replication.policy.separator", "contains the separator"),
        ("A.security.protocol = TLS\n", "A.security.protocol", "security protocol"),
    ],
)
def test_contradictory_or_invalid_values(body: str, key: str, words: str) -> None:
    error = props_error(body)
    assert error.key == key
    assert error.line == 3 + next(n for n, line in enumerate(body.splitlines(), 1) if line.startswith(key))
    assert words in str(error)


def test_value_from_top_level_default_is_reported_where_written() -> None:
    error = props_error("tasks.max = 0\nA->B.enabled = true\n")
    assert (error.line, error.key) == (4, "tasks.max")


def test_identity_active_active_needs_provenance_header() -> None:
    body = "replication.policy.class = identity\nA->B.enabled = true\nB->A.enabled = true\n"
    config = props(body)  # the header is on by default
    assert all(flow.provenance_header for flow in config.flows)
    error = props_error(body + "B->A.mirrordrill.provenance.header = false\n")
    assert (error.line, error.key) == (7, "B->A.mirrordrill.provenance.header")
    assert "cycle" in error.problem
    # One direction only, or the default policy, needs no header.
    props("replication.policy.class = identity\nA->B.enabled = true\nmirrordrill.provenance.header = false\n")
    props("A->B.enabled = true\nB->A.enabled = true\nmirrordrill.provenance.header = false\n")
    # A disabled reverse flow is no cycle.
    props(
        "replication.policy.class = identity\nA->B.enabled = true\nB->A.enabled = false\n"
        "mirrordrill.provenance.header = false\n"
    )


def test_identity_ring_needs_provenance_on_every_hop() -> None:
    head = "clusters = A, B, C\nA.bootstrap.servers=a:1\nB.bootstrap.servers=b:1\nC.bootstrap.servers=c:1\n"
    ring = "A->B.enabled = true\nB->C.enabled = true\nC->A.enabled = true\nA->B.replication.policy.class = identity\n"
    error = props_error(ring + "C->A.mirrordrill.provenance.header = false\n", head)
    assert error.key == "C->A.mirrordrill.provenance.header"
    # The header defaults to on, so the ring itself is fine.
    assert len(props(ring, head).enabled_flows()) == 3


def test_rejected_mm2_keys_are_explained() -> None:
    cases = {
        "enabled = true\n": "A->B.enabled",
        "bootstrap.servers = x:1\n": "A.bootstrap.servers",
        "consumer.max.poll.records = 5\n": "<cluster>.consumer.max.poll.records",
        "topics.blacklist = tmp.*\n": "topics.exclude",
        "A->B.transforms = mask\n": "transforms",
        "A->B.source.consumer.max.poll.records = 5\n": "A.consumer",
        "A->B.security.protocol = SSL\n": "A.security.protocol",
        "A->B.mirrordrill.spark.master = local\n": "mirrordrill.spark.master",
        "A->B.mirrordrill.starting.offsets = latest\n": "A->B.consumer.auto.offset.reset",
        "value.converter = org.apache.kafka.connect.json.JsonConverter\n": "ByteArrayConverter",
        "A->B.topic.filter.class = com.acme.Filter\n": "DefaultTopicFilter",
        "A->B.name = mine\n": "names its connectors",
    }
    for body, words in cases.items():
        error = props_error(body)
        assert error.line == 4, body
        assert words in str(error), (body, str(error))


def test_alias_containing_separator_is_rejected() -> None:
    head = "clusters = us.east, west\nus.east.bootstrap.servers = e:1\nwest.bootstrap.servers = w:1\n"
    error = props_error("west->us.east.enabled = true\n", head)
    assert error.key == "west->us.east.replication.policy.separator"
    assert error.line == 4
    config = props("west->us.east.enabled = true\nreplication.policy.separator = _\n", head)
    assert config.flows[0].target == "us.east"
    assert config.clusters["us.east"].bootstrap_servers == ["e:1"]


def test_shared_checkpoint_directory_is_rejected() -> None:
    body = (
        "A->B.enabled = true\nB->A.enabled = true\n"
        "A->B.mirrordrill.checkpoint.dir = /c\nB->A.mirrordrill.checkpoint.dir = /c\n"
    )
    error = props_error(body)
    assert (error.line, error.key) == (7, "B->A.mirrordrill.checkpoint.dir")
    config = props("mirrordrill.checkpoint.dir = /ckpt\nA->B.enabled = true\nB->A.enabled = true\n")
    assert config.flow_checkpoint_dir(config.flow("A", "B")) == "/ckpt/A__B"
    assert config.flow_checkpoint_dir(config.flow("B", "A")) == "/ckpt/B__A"
    assert props("A->B.enabled = true\n").flow_checkpoint_dir(config.flows[0]) is None


# ======================================================================================
# YAML
# ======================================================================================
def test_yaml_flows_default_to_enabled() -> None:
    config = parse_yaml(YAML_HEAD, "r.yaml")
    flow = config.flows[0]
    assert flow.enabled
    for name, expected in MM2_DEFAULTS.items():
        assert getattr(flow, name) == expected, name


def test_yaml_defaults_and_overrides() -> None:
    text = YAML_HEAD.replace(
        "flows:", "defaults:\n  tasks_max: 3\n  topics: 'a, b'\n  consumer: {fetch.min.bytes: 1}\nflows:"
    )
    text += (
        "    num_streams: 5\n    consumer: {max.poll.records: 7}\n  - source: B\n    target: A\n    enabled: false\n"
    )
    config = parse_yaml(text, "r.yaml")
    a_b, b_a = config.flow("A", "B"), config.flow("B", "A")
    assert (a_b.tasks_max, b_a.tasks_max) == (5, 3)
    assert a_b.topics == b_a.topics == ["a", "b"]
    assert a_b.consumer == {"fetch.min.bytes": "1", "max.poll.records": "7"}
    assert not b_a.enabled


@pytest.mark.parametrize(
    ("extra", "line", "key", "words"),
    [
        ("    topcis: [x]\n", 9, "flows[0].topcis", "did you mean 'topics'"),
        (
            "    sync.group.offsets.enabled: true\n",
            9,
            "flows[0].sync.group.offsets.enabled",
            "'sync_group_offsets_enabled'",
        ),
        ("  - source: A\n    target: C\n", 10, "flows[1].target", "one of A, B"),
        ("  - source: A\n    target: A\n", 10, "flows[1].target", "onto itself"),
        ("  - source: A\n    target: B\n", 9, "flows[1]", "declared twice"),
        ("    mode: realtime\n    max_offsets_per_trigger: 10\n", 10, "flows[0].max_offsets_per_trigger", "real-time"),
        ("    tasks_max: two\n", 9, "flows[0].tasks_max", "valid integer"),
        ("    enabled: 'yes'\n", 9, "flows[0].enabled", "valid boolean"),
        ("    tasks_max: 1\n    tasks_max: 2\n", 10, "flows[0].tasks_max", "duplicate key"),
        ("    tasks_max: 1\n    num_streams: 2\n", 10, "flows[0].num_streams", "same setting"),
        ("    mm2_only: {topics: x}\n", 9, "flows[0].mm2_only.topics", "mirrordrill honours it"),
        ("    topics: ['(']\n", 9, "flows[0].topics", "invalid regex"),
        ("    consumer: {auto.offset.reset: none}\n", 9, "flows[0].consumer.auto.offset.reset", "earliest, latest"),
        ("  - [\n", 10, None, "invalid YAML"),
    ],
)
def test_yaml_errors_are_located(extra: str, line: int, key: str | None, words: str) -> None:
    error = yaml_error(YAML_HEAD + extra)
    assert error.source == "replicator.yaml"
    assert error.line == line
    assert error.key == key
    assert words in str(error)


def test_yaml_identity_active_active_needs_provenance_header() -> None:
    text = YAML_HEAD + (
        "    replication_policy_class: identity\n"
        "  - source: B\n    target: A\n"
        "    replication_policy_class: org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n"
        "    provenance_header: false\n"
    )
    error = yaml_error(text)
    assert (error.line, error.key) == (13, "flows[1].provenance_header")


def test_yaml_structure_errors() -> None:
    assert yaml_error("").line == 1
    assert yaml_error("flows: []\n").key == "clusters"
    error = yaml_error("clusters:\n  A: {bootstrap_servers: a:1, client: {max.poll.records: 5}}\n")
    assert (error.line, error.key) == (2, "clusters.A.client.max.poll.records")
    error = yaml_error("clusters:\n  A: {bootstrap_servers: a:1}\nspark_mastr: local\n")
    assert (error.line, error.key, error.suggestions) == (3, "spark_mastr", ("spark_master",))
    error = yaml_error("clusters:\n  A: {bootstrap_servers: a:1}\nflows: {source: A}\n")
    assert error.line == 3 and "list of flows" in error.problem
    error = yaml_error("clusters:\n  A: {bootstrap_servers: a:1}\nmm2_only: {offset.storag.replication.factor: 1}\n")
    assert error.line == 3 and "offset.storage.replication.factor" in error.suggestions
    error = yaml_error(YAML_HEAD.replace("    target: B\n", ""))
    assert error.key == "flows[0]" and "target" in error.problem


# ======================================================================================
# Example files, rendering and round trips
# ======================================================================================
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
