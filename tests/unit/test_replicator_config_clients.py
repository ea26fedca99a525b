"""The replicator's configuration: clusters, client settings, and settings kept for MM2 only."""

from __future__ import annotations

from tests.unit.replicator_config_helpers import YAML_HEAD, props, props_error, yaml_error


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
