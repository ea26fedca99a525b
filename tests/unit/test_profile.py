"""The short profile: durations scaled, the same faults in the same order, the file's short limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from mirrordrill.harness.drill.profile import ProfileError, apply_profile, overlay
from mirrordrill.harness.drill.validate import ScenarioInvalid, load_scenario, parse_scenario
from mirrordrill.harness.tools.sweep.params import SweepError, apply_params

REPO = Path(__file__).resolve().parents[2]

DRILL = """
name: p
clusters: {primary: {}, dr: {}}
replication: {flows: [{source: primary, target: dr, topics: [orders]}]}
topics: [{name: orders, cluster: primary}]
load:
  backlog: [{cluster: primary, topic: orders, records: 1000}]
  producers: [{cluster: primary, topics: [orders], rate: 100}]
duration: 1m
drain_timeout: 90s
timeline:
  - {at: 20s, when: {lag_at_most: 300, timeout: 30s}, do: blackhole, link: [primary, dr]}
  - {at: 30s, do: heal, link: [primary, dr]}
  - {do: wait_drain, timeout: 60s}
invariants: {duplicates: 0}
expectations:
  lost: 0
  latency_ms.p99: "<= 1500"
  mirrormaker2: {duplicates: "<= 500", lost: 0}
"""


def test_full_is_the_file_as_written():
    assert parse_scenario(DRILL, "p.yaml", profile="full") == parse_scenario(DRILL, "p.yaml")


def test_short_halves_the_load_every_at_and_condition_wait_and_keeps_the_steps_and_the_limits_of_time():
    full, short = parse_scenario(DRILL, "p.yaml"), parse_scenario(DRILL, "p.yaml", profile="short")
    assert short.duration == 30.0
    assert [s.at for s in short.timeline] == [10.0, 15.0, None]
    assert [s.do for s in short.timeline] == [s.do for s in full.timeline]  # same faults, same order
    assert short.timeline[0].when.timeout == 15.0  # waits inside the load it shortens
    assert short.timeline[2].timeout == 60.0  # a limit on the step, not a duration
    assert short.drain_timeout == 90.0
    assert short.load.backlog[0].records == 500
    assert short.load.producers[0].rate == 100  # a rate is not a duration


def test_the_files_own_scale_and_short_limits_replace_the_lines_on_the_same_metric():
    text = DRILL + """profiles:
  short:
    scale: 0.25
    invariants: {duplicates: 5}
    expectations:
      "latency_ms.p99": "<= 600"
      mirrormaker2: {duplicates: "<= 200"}
"""
    s = parse_scenario(text, "p.yaml", profile="short")
    assert s.duration == 15.0 and s.timeline[0].at == 5.0
    assert s.invariants.duplicates == 5
    assert s.expectations == {"lost": 0, "latency_ms.p99": "<= 600",
                              "mirrormaker2": {"duplicates": "<= 200", "lost": 0}}
    assert parse_scenario(text, "p.yaml").expectations["latency_ms.p99"] == "<= 1500"


def test_a_bad_short_limit_is_refused_when_the_file_is_checked_at_full():
    text = DRILL + "profiles: {short: {expectations: {lsot: 0}}}\n"
    with pytest.raises(ScenarioInvalid, match="at profile short"):
        parse_scenario(text, "p.yaml")


def test_a_bad_scale_is_named():
    with pytest.raises(ScenarioInvalid, match="scale"):
        parse_scenario(DRILL + "profiles: {short: {scale: 2}}\n", "p.yaml", profile="short")


def test_an_unknown_profile_names_the_valid_ones():
    with pytest.raises(ProfileError, match="full, short"):
        apply_profile({"name": "x"}, "tiny")
    with pytest.raises(SweepError, match="profile='tiny'"):
        apply_params({"name": "x", "replication": {"flows": []}}, {"profile": "tiny"})


def test_a_sweep_point_at_the_short_profile_keeps_its_swept_duration():
    d = apply_params({"name": "x", "duration": 60, "timeline": [{"at": 20}], "replication": {"flows": []},
                      "profiles": {"short": {}}}, {"profile": "short", "duration": 40})
    assert d["duration"] == 40 and d["timeline"][0]["at"] == 10.0 and "profiles" not in d


STANDALONE_LIMITS = """spark_masters:
  standalone:
    invariants: {duplicates: 2}
    expectations: {latency_ms.p99: "<= 30000"}
profiles:
  short:
    spark_masters:
      standalone: {expectations: {latency_ms.p99: "<= 40000"}}
"""


@pytest.mark.parametrize("master", ["standalone", "spark://127.0.0.1:7077"])
def test_a_standalone_master_reads_the_files_standalone_limits_after_the_profiles(master):
    text = DRILL + STANDALONE_LIMITS
    full = parse_scenario(text, "p.yaml", spark_master=master)
    assert full.expectations["latency_ms.p99"] == "<= 30000" and full.invariants.duplicates == 2
    assert full.expectations["lost"] == 0  # the lines it does not name stay the file's
    short = parse_scenario(text, "p.yaml", profile="short", spark_master=master)
    assert short.expectations["latency_ms.p99"] == "<= 40000" and short.invariants.duplicates == 2


def test_a_local_master_and_mirrormaker2_keep_the_files_own_limits():
    text = DRILL + STANDALONE_LIMITS
    for s in (parse_scenario(text, "p.yaml"), parse_scenario(text, "p.yaml", spark_master="local[2]"),
              parse_scenario(text, "p.yaml", replicator="mirrormaker2", spark_master="standalone")):
        assert s.expectations["latency_ms.p99"] == "<= 1500" and s.invariants.duplicates == 0
    # the file's own master chooses when the run gives none
    on_standalone = text.replace("replication: {flows:", "replication: {spark: {master: standalone}, flows:")
    assert parse_scenario(on_standalone, "p.yaml").expectations["latency_ms.p99"] == "<= 30000"


def test_a_bad_standalone_limit_is_refused_when_the_file_is_checked_on_the_default_master():
    with pytest.raises(ScenarioInvalid, match="on a standalone Spark master: .*lsot"):
        parse_scenario(DRILL + "spark_masters: {standalone: {expectations: {lsot: 0}}}\n", "p.yaml")
    with pytest.raises(ScenarioInvalid, match="at profile short: on a standalone Spark master"):
        parse_scenario(DRILL + "profiles: {short: {spark_masters: {standalone: {expectations: {lsot: 0}}}}}\n",
                       "p.yaml")
    with pytest.raises(ScenarioInvalid, match="spark_masters"):
        parse_scenario(DRILL + "spark_masters: {yarn: {}}\n", "p.yaml")


def test_overlay_merges_a_replicators_section_and_ignores_spaces_in_keys():
    assert overlay({"a[x -> y]": 1, "pyspark": {"d": 0, "l": 0}}, {"a[x->y]": 2, "pyspark": {"d": 3}}) == \
        {"a[x->y]": 2, "pyspark": {"d": 3, "l": 0}}


@pytest.mark.parametrize("drill", sorted((REPO / "scenarios").glob("*.yaml")), ids=lambda p: p.stem)
@pytest.mark.parametrize("replicator", [None, "mirrormaker2"])
def test_every_shipped_drill_loads_at_the_short_profile(drill, replicator):
    full, short = load_scenario(drill, replicator), load_scenario(drill, replicator, "short")
    assert short.duration < full.duration
    assert [s.do for s in short.timeline] == [s.do for s in full.timeline]
