"""The replicator's configuration: errors name the file, line and key, and what is valid."""

from __future__ import annotations

import pytest

from mirrordrill.primitives.config_errors import ConfigError
from mirrordrill.replicator.config.properties_reader import parse_mm2_properties
from tests.unit.replicator_config_helpers import props, props_error, yaml_error


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
