"""The proxy guard's pure parts on hand-built frames: what a request writes, what is refused, and the
drill's one failure line from a proxy's refusals file. Real clients and brokers are in
tests/integration/test_kafka_proxy_guard.py."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from types import SimpleNamespace

import pytest

from mirrordrill.harness.lab.brokers.existing import refused_writes
from mirrordrill.harness.lab.network.kafka_proxy import guard
from mirrordrill.harness.lab.network.kafka_proxy.wire import array_len, string, uvarint

OWNER = guard.Owner("md-g-")


def header(api: int, version: int, flexible: bool) -> bytes:
    return struct.pack(">hhi", api, version, 1) + string("client", False) + (b"\x00" if flexible else b"")


def create_topics_v5(*names: str) -> bytes:
    out = header(19, 5, True) + array_len(len(names), True)
    for name in names:
        # name, partitions, replication factor, no assignments, no configs, no tags
        out += string(name, True) + struct.pack(">ih", 1, 1) + uvarint(1) + uvarint(1) + b"\x00"
    return out + struct.pack(">ib", 30000, 0) + b"\x00"


def metadata(version: int, name: str, auto_create: bool) -> bytes:
    flexible = version >= 9
    topic = (bytes(16) if version >= 10 else b"") + string(name, flexible) + (b"\x00" if flexible else b"")
    out = header(3, version, flexible) + array_len(1, flexible) + topic
    if version >= 4:
        out += bytes([auto_create])
    if version >= 8:
        out += b"\x00" * (1 if version >= 11 else 2)  # authorized-operations flags
    return out + (b"\x00" if flexible else b"")


@pytest.mark.parametrize("name, owned", [
    ("md-g-orders", True), ("md-g-dr.md-g-orders", True), ("md-g-primary.checkpoints.internal", True),
    ("mm2-offset-syncs.md-g-dr.internal", True), ("mm2-configs.md-g-primary.internal", True),
    ("orders", False), ("heartbeats", False), ("mm2-offset-syncs.team-dr.internal", False), ("md-gx-orders", False),
])
def test_owned_topics_follow_the_owned_name_rule(name, owned):
    assert OWNER.owns(guard.Write("topic", name)) is owned


def test_a_create_topics_naming_a_team_topic_is_refused_even_beside_an_owned_one():
    assert guard.writes(19, 5, create_topics_v5("md-g-a", "orders")) == [guard.Write("topic", "md-g-a"),
                                                                          guard.Write("topic", "orders")]
    refusal = guard.check(OWNER, 19, 5, create_topics_v5("md-g-a", "orders"))
    assert refusal is not None and refusal.write == guard.Write("topic", "orders") and refusal.api == "CreateTopics"
    assert guard.check(OWNER, 19, 5, create_topics_v5("md-g-a")) is None


def test_a_version_the_guard_does_not_read_is_refused_unread():
    refusal = guard.check(OWNER, 0, 12, header(0, 12, True) + bytes(20))
    assert refusal is not None and not refusal.read and "up to version 9" in refusal.reason
    assert guard.check(OWNER, 30, 3, header(30, 3, True) + uvarint(1)).write.kind == "cluster"  # CreateAcls


def test_an_api_not_known_as_read_only_fails_closed():
    assert guard.check(OWNER, 1, 15, header(1, 15, True)) is None  # Fetch
    unregister = guard.check(OWNER, 64, 0, header(64, 0, True))  # UnregisterBroker
    assert unregister is not None and unregister.write.kind == "cluster" and "drill changes nothing" in unregister.reason


@pytest.mark.parametrize("version", [4, 9, 12])
def test_metadata_loses_its_auto_creation_flag_only_for_a_team_topic(version):
    unowned = metadata(version, "orders", auto_create=True)
    cleared = guard.without_auto_creation(OWNER, version, unowned)
    assert cleared == metadata(version, "orders", auto_create=False)
    owned = metadata(version, "md-g-orders", auto_create=True)
    assert guard.without_auto_creation(OWNER, version, owned) == owned


def test_metadata_before_v4_naming_a_team_topic_is_refused():
    refusal = guard.without_auto_creation(OWNER, 3, metadata(3, "orders", auto_create=False))
    assert isinstance(refusal, guard.Refusal) and refusal.write.name == "orders"


def test_the_drill_fails_with_one_line_naming_the_refused_request(tmp_path: Path):
    record = {"cluster": "md-g-dr", "client": "127.0.0.1:40696", "api": "Produce", "version": 9, "kind": "topic",
              "name": "orders", "reason": "the drill owns only names starting with 'md-g-'", "ts_ms": 1}
    path = tmp_path / "refusals.jsonl"
    path.write_text(json.dumps(record) + "\n" + json.dumps({**record, "name": "payments"}) + "\n")
    clusters = [SimpleNamespace(refusals_file=path), SimpleNamespace(), SimpleNamespace(refusals_file=tmp_path / "x")]
    assert refused_writes(clusters) == (
        "the Kafka proxy in front of md-g-dr refused Produce to topic 'orders' from 127.0.0.1:40696: the drill owns "
        f"only names starting with 'md-g-' (and 1 more refusal(s), listed in {path})")
    assert refused_writes([SimpleNamespace(refusals_file=tmp_path / "none.jsonl")]) is None


def test_a_refusal_record_cut_short_still_fails_the_drill(tmp_path):
    # the proxy is killed at the end of a drill: its last line may be half written
    path = tmp_path / "refusals.jsonl"
    path.write_text('{"cluster": "md-g-dr", "api": "Produce", "kind": "topic", "na\n\n')
    assert refused_writes([SimpleNamespace(refusals_file=path)]).startswith(
        "the Kafka proxy refused a write (its record is unreadable: ")
