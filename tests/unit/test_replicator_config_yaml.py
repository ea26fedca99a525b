"""The replicator's configuration in YAML: the same model, its own errors."""

from __future__ import annotations

import pytest

from mirrordrill.replicator.config.yaml_reader import parse_yaml
from tests.unit.replicator_config_helpers import MM2_DEFAULTS, YAML_HEAD, yaml_error


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
