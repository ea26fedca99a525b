"""LoadSpec and the other load/consumer models: defaults, validation errors, samplers."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from pydantic import ValidationError

from mirrordrill.loadgen.app_consumer import CommitPolicy, StartPosition
from mirrordrill.loadgen.spec import KeySpec, LoadSpec, LoadStats, SizeSpec, TopicSelection


def spec(**overrides) -> LoadSpec:
    base = dict(cluster="east", bootstrap_servers="127.0.0.1:9092", topics=["orders"], rate=100,
                output_dir="out")
    return LoadSpec.model_validate({**base, **overrides})


def error_of(**overrides) -> str:
    with pytest.raises(ValidationError) as e:
        spec(**overrides)
    return str(e.value)


def test_defaults_ask_for_the_strongest_delivery_guarantees():
    s = spec()
    assert s.producer_settings() == {"acks": "all", "enable.idempotence": True,
                                     "bootstrap.servers": "127.0.0.1:9092"}
    assert s.record_size == SizeSpec(fixed=1024)
    assert s.keys.kind == "none" and s.users == 1 and s.duration_s is None
    assert s.round_robin and s.topics == {"orders": 1.0}


def test_producer_settings_override_defaults_but_not_the_address():
    s = spec(producer={"acks": "1", "linger.ms": 20})
    assert s.producer_settings()["acks"] == "1" and s.producer_settings()["linger.ms"] == 20
    assert "bootstrap_servers" in error_of(producer={"bootstrap.servers": "elsewhere:9092"})
    assert "never acknowledges" in error_of(producer={"acks": 0})
    assert spec(producer={"acks": 1}).producer_settings()["acks"] == 1


@pytest.mark.parametrize("rate", [-1, 0])
def test_rate_must_be_positive(rate):
    assert "rate" in error_of(rate=rate)


@pytest.mark.parametrize("field,value", [("users", 0), ("duration_s", -5), ("flush_timeout_s", -1),
                                         ("create_topics_partitions", 0)])
def test_counts_and_durations_are_checked(field, value):
    assert field in error_of(**{field: value})


def test_unknown_size_distribution_names_the_valid_ones():
    msg = error_of(record_size={"pareto": [1, 2]})
    assert "unknown size distribution" in msg and "uniform" in msg and "normal" in msg


@pytest.mark.parametrize("size,fragment", [
    ({"uniform": [500, 100]}, "min <= max"),
    ({"uniform": [0, 100]}, "0 < min"),
    ({"normal": [1024, -1]}, "sd >= 0"),
    ({"fixed": 0}, "greater than 0"),
    ({"fixed": 100, "uniform": [1, 2]}, "exactly one"),
    ({}, "exactly one"),
])
def test_invalid_sizes(size, fragment):
    assert fragment in error_of(record_size=size)


def test_size_shorthand_and_samplers():
    assert spec(record_size=512).record_size.fixed == 512
    rng = random.Random(1)
    uniform = SizeSpec(uniform=(100, 200)).sampler(rng)
    assert all(100 <= uniform() <= 200 for _ in range(1000))
    normal = SizeSpec(normal=(50, 100)).sampler(rng)
    values = [normal() for _ in range(2000)]
    assert min(values) >= 1  # clipped, never zero or negative
    assert SizeSpec(normal=(1000, 10)).mean() == 1000


@pytest.mark.parametrize("keys,fragment", [
    ("zipf", "unknown key spec"),
    ({"zipf": 3}, "unknown key distribution"),
    ({"hot": {"keys": 10, "hot_keys": 10}}, "fewer than keys"),
    ({"hot": {"keys": 10, "fraction": 1.5}}, "fraction"),
    ({"uniform": 0}, "uniform"),
    ({"uniform": 5, "hot": {"keys": 10}}, "not both"),
])
def test_invalid_keys(keys, fragment):
    assert fragment in error_of(keys=keys)


def test_key_samplers():
    rng = random.Random(7)
    assert spec(keys="none").keys.sampler(rng)() is None
    uniform = KeySpec.model_validate({"uniform": 4}).sampler(rng)
    assert {uniform() for _ in range(500)} == {b"k0", b"k1", b"k2", b"k3"}
    hot = KeySpec.model_validate({"hot": {"keys": 100, "hot_keys": 2, "fraction": 0.9}})
    pick = hot.sampler(rng)
    counts = Counter(pick() for _ in range(10_000))
    on_hot = counts[b"k0"] + counts[b"k1"]
    assert 8_500 < on_hot < 9_500
    assert len(counts) > 50


def test_topics_list_is_round_robin_and_mapping_is_weighted():
    assert spec(topics="a,b").topics == {"a": 1.0, "b": 1.0}
    weighted = spec(topics={"a": 3, "b": 1})
    assert not weighted.round_robin and weighted.topics == {"a": 3.0, "b": 1.0}


@pytest.mark.parametrize("topics,fragment", [
    ([], "at least one topic"),
    (["a", "a"], "listed twice"),
    (["bad topic"], "invalid topic name"),
    ({"a": 0}, "weight must be > 0"),
])
def test_invalid_topics(topics, fragment):
    assert fragment in error_of(topics=topics)


@pytest.mark.parametrize("prefix", ["a,b", "", "x" * 65, "has space"])
def test_producer_id_prefix_cannot_break_histories(prefix):
    assert "producer_id_prefix" in error_of(producer_id_prefix=prefix)


def test_unknown_fields_are_refused():
    assert "extra" in error_of(ratee=5).lower() or "ratee" in error_of(ratee=5)


def test_spec_survives_a_json_round_trip(tmp_path):
    s = spec(topics={"a": 2, "b": 1}, record_size={"normal": [1000, 50]},
             keys={"hot": {"keys": 50, "hot_keys": 3, "fraction": 0.5}}, duration_s=8,
             producer={"linger.ms": 5}, instance="abc123")
    assert LoadSpec.load(s.dump(tmp_path / "spec.json")) == s
    assert s.writer_tag("abc123") == "load-abc123"


def test_stats_model_round_trip():
    stats = LoadStats(cluster="east", instance="i", pid=1, target_rate=10, users=1,
                      ledger_path="l", uncertain_path="u")
    assert LoadStats.model_validate_json(stats.model_dump_json()) == stats


def test_topic_selection():
    by_name = TopicSelection.of(["a", "b"])
    assert by_name.matches("a") and not by_name.matches("c")
    by_regex = TopicSelection.of("^east\\..*")
    assert by_regex.matches("east.orders") and not by_regex.matches("orders")
    assert not TopicSelection.of("^.*").matches("__consumer_offsets")
    assert TopicSelection.of("orders").names == ("orders",)
    with pytest.raises(ValidationError, match="invalid topic pattern"):
        TopicSelection.of("^(unclosed")


def test_start_positions_and_commit_policies():
    pos = StartPosition.at_offsets({("t", 0): 5, ("t", 1): 7})
    assert pos.offsets == {"t": {0: 5, 1: 7}} and pos.strategy == "offsets"
    assert StartPosition.at_timestamp(123).timestamp_ms == 123
    with pytest.raises(ValidationError, match="needs offsets"):
        StartPosition(strategy="offsets")
    with pytest.raises(ValidationError, match="needs timestamp_ms"):
        StartPosition(strategy="timestamp")
    with pytest.raises(ValidationError):
        StartPosition(strategy="somewhere")
    with pytest.raises(ValidationError, match="mode: manual"):
        CommitPolicy(mode="auto", every_records=10)
    assert CommitPolicy(mode="manual", every_records=10).interval_ms == 1000
