"""Replicator adapters without running anything: mm2.properties rendering, placeholders, factory errors.

Environments here are real ``Environment``/``KafkaCluster`` objects with fixed ports that are
never started: the adapters only need their addresses.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest

from mirrordrill.harness.drill.engine import Drill
from mirrordrill.harness.drill.replicators import (
    REPLICATOR_KINDS,
    FlowSpec,
    ReplicationSetup,
    ReplicatorError,
    SetupError,
    UnknownReplicatorKind,
    UnsupportedOperation,
    make_replicator,
)
from mirrordrill.harness.drill.replicators.command import PLACEHOLDERS, CommandTemplate, CommandTemplateError, parse_translation
from mirrordrill.harness.drill.replicators.mirrormaker2 import plan_nodes
from mirrordrill.harness.drill.validate import parse_scenario
from mirrordrill.harness.lab.brokers.broker import BrokerPorts
from mirrordrill.harness.lab.brokers.cluster import ClusterSpec, KafkaCluster
from mirrordrill.harness.lab.environment import Environment, TopologySpec
from mirrordrill.primitives.properties_syntax import read_properties
from mirrordrill.primitives.redaction import redact_argv, redact_properties
from mirrordrill.replicator.config.properties_reader import parse_mm2_properties
from mirrordrill.replicator.mm2_format import Checkpoint, Heartbeat
from tests.unit.test_scenario_validation import BASE

JARS = [Path("/jars/connect-mirror.jar"), Path("/jars/kafka-clients.jar")]


def environment(tmp_path: Path, names=("east", "west"), brokers: dict[str, int] | None = None,
                links=None) -> Environment:
    """An environment whose clusters have addresses but no processes."""
    spec = TopologySpec(tuple(ClusterSpec(n, brokers=(brokers or {}).get(n, 1)) for n in names), links)
    env = Environment(spec, tmp_path / "env")
    ports = iter(range(20000, 40000))
    for c in spec.clusters:
        remotes = spec.remotes_of(c.name)
        broker_ports = [BrokerPorts(local=next(ports), controller=next(ports), wan={r: next(ports) for r in remotes},
                                    wan_advertised={r: next(ports) for r in remotes}) for _ in range(c.brokers)]
        env.clusters[c.name] = KafkaCluster(c, broker_ports, env.workdir / c.name, "java", ())
    return env


def mm2(setup: ReplicationSetup, **options):
    return make_replicator("mirrormaker2", setup, java="java", classpath=JARS, **options)


def props(text: str) -> dict[str, str]:
    """The file as MM2 would read it (the project's own properties reader)."""
    return {p.key: p.value for p in read_properties(text)}


# ======================================================================================
# mm2.properties
# ======================================================================================
def test_active_passive_file_reaches_the_source_over_the_wan_and_sizes_internal_topics(tmp_path):
    env = environment(tmp_path)
    setup = ReplicationSetup(env, [FlowSpec("east", "west", topics=["orders.*", r"payments\..*"])])
    replicator = mm2(setup)
    (node,) = replicator.nodes
    text = replicator.render(node)
    p = props(text)
    assert p["clusters"] == "east, west"
    assert p["east.bootstrap.servers"] == env.cluster("east").wan_bootstrap("west")
    assert p["west.bootstrap.servers"] == env.cluster("west").bootstrap
    assert p["east->west.enabled"] == "true" and "west->east.enabled" not in p
    assert p["topics"] == r"orders.*, payments\..*"  # one flow: written once at top level
    for key in ("replication.factor", "checkpoints.topic.replication.factor", "heartbeats.topic.replication.factor",
                "offset-syncs.topic.replication.factor"):
        assert p[key] == "1", key
    for key in ("offset.storage.replication.factor", "config.storage.replication.factor",
                "status.storage.replication.factor"):
        assert p[f"west.{key}"] == "1", key
    assert p["refresh.topics.interval.seconds"] == "5"
    assert p["emit.checkpoints.interval.seconds"] == "5"
    assert p["refresh.groups.interval.seconds"] == "5"
    assert p["west.offset.flush.interval.ms"] == "5000"
    assert p["plugin.discovery"] == "service_load"
    assert node.process.argv[-3:] == [str(node.config_path), "--clusters", "west"]
    assert "-Xmx512m" in node.process.argv and node.process.cwd == node.workdir
    # The file means to our own loader what it means to MM2.
    config = parse_mm2_properties(text)
    flow = config.flow("east", "west")
    assert flow.topics == ["orders.*", r"payments\..*"] and flow.replication_factor == 1


def test_replication_factors_follow_each_clusters_size(tmp_path):
    env = environment(tmp_path, brokers={"east": 1, "west": 3})
    replicator = mm2(ReplicationSetup(env, [FlowSpec("east", "west")]))
    text = replicator.render(replicator.nodes[0])
    flow = parse_mm2_properties(text).flow("east", "west")  # MM2's defaults count, written or not
    assert (flow.replication_factor, flow.checkpoints_topic_replication_factor,
            flow.heartbeats_topic_replication_factor) == (3, 3, 3)
    assert flow.offset_syncs_topic_replication_factor == 1  # the offset-syncs topic lives on the source
    assert props(text)["west.status.storage.replication.factor"] == "3"


def test_placement_at_the_source_flips_which_side_goes_over_the_wan(tmp_path):
    env = environment(tmp_path)
    replicator = mm2(ReplicationSetup(env, [FlowSpec("east", "west", placement="source")]))
    (node,) = replicator.nodes
    assert (node.target, node.location, node.workdir.name) == ("west", "east", "west-at-east")
    p = props(replicator.render(node))
    assert p["east.bootstrap.servers"] == env.cluster("east").bootstrap
    assert p["west.bootstrap.servers"] == env.cluster("west").wan_bootstrap("east")
    assert node.process.argv[-2:] == ["--clusters", "west"]


def test_one_process_per_target_and_placement_with_only_its_own_clusters(tmp_path):
    env = environment(tmp_path, names=("east", "west", "north"))
    setup = ReplicationSetup(env, [FlowSpec("east", "west"), FlowSpec("north", "west"), FlowSpec("west", "east"),
                                   FlowSpec("north", "east", placement="source")])
    replicator = mm2(setup)
    plan = {(n.target, n.location): [f.name for f in n.flows] for n in replicator.nodes}
    assert plan == {("west", "west"): ["east->west", "north->west"], ("east", "east"): ["west->east"],
                    ("east", "north"): ["north->east"]}
    west = next(n for n in replicator.nodes if n.target == "west")
    p = props(replicator.render(west))
    assert p["clusters"] == "east, north, west"
    assert p["east->west.enabled"] == p["north->west.enabled"] == "true"
    assert p["north.bootstrap.servers"] == env.cluster("north").wan_bootstrap("west")
    at_north = next(n for n in replicator.nodes if n.location == "north")
    assert props(replicator.render(at_north))["clusters"] == "east, north"
    assert len({n.workdir for n in replicator.nodes}) == 3


def test_flow_settings_override_drill_defaults_and_reach_the_right_keys(tmp_path):
    env = environment(tmp_path, names=("east", "west", "north"))
    setup = ReplicationSetup(env, [
        FlowSpec("east", "west", settings={"refresh.topics.interval.seconds": 30, "tasks.max": 4,
                                           "offset.lag.max": 10, "consumer.fetch.min.bytes": "1000",
                                           "sync.group.offsets.enabled": True}),
        FlowSpec("north", "west", topics_exclude=["secret-.*"]),
    ])
    replicator = mm2(setup, worker_settings={"offset.flush.interval.ms": "1000"})
    p = props(replicator.render(replicator.nodes[0]))
    assert p["east->west.refresh.topics.interval.seconds"] == "30"
    assert p["north->west.refresh.topics.interval.seconds"] == "5"
    assert p["east->west.tasks.max"] == "4" and p["east->west.offset.lag.max"] == "10"
    assert p["east->west.consumer.fetch.min.bytes"] == "1000"
    assert p["east->west.sync.group.offsets.enabled"] == "true"
    assert p["north->west.topics.exclude"] == "secret-.*"
    assert p["west.offset.flush.interval.ms"] == "1000"


def test_exactly_once_mode_sets_what_mm2_reads_where_it_reads_it(tmp_path):
    setup = ReplicationSetup(environment(tmp_path), [FlowSpec("east", "west")])
    assert "exactly.once" not in mm2(setup).render(mm2(setup).nodes[0])  # off unless asked, as in MM2
    replicator = mm2(setup, exactly_once=True)
    p = props(replicator.render(replicator.nodes[0]))
    # per target only: MM2 builds a worker's settings from <target>.* and ignores a top-level one
    assert p["west.exactly.once.source.support"] == "enabled" and "exactly.once.source.support" not in p
    # the source connector declares exactly-once support only when it reads committed records
    assert p["east->west.consumer.isolation.level"] == "read_committed"
    # zombie fencing needs the internal REST server; it must listen on loopback, never every interface
    assert p["dedicated.mode.enable.internal.rest"] == "true" and p["listeners"] == "http://127.0.0.1:0"
    assert replicator.describe()["exactly_once"] is True


@pytest.mark.parametrize("kind, options", [("mirrormaker2", {"exactly_once": True}), ("pyspark", {})])
def test_a_drill_file_s_exactly_once_reaches_mm2_and_only_mm2(tmp_path, kind, options):
    scenario = parse_scenario(BASE.replace("replication:\n", "replication:\n  mirrormaker2: {exactly_once: true}\n", 1),
                              "d.yaml")
    got = Drill(scenario, tmp_path / "d.yaml", tmp_path / "out", replicator=kind)._replicator_options()
    assert {k: v for k, v in got.items() if k in ("exactly_once", "mode", "command")} == options


def test_drill_intervals_can_be_turned_off_but_replication_factors_stay(tmp_path):
    replicator = mm2(ReplicationSetup(environment(tmp_path), [FlowSpec("east", "west")]), drill_intervals=False)
    p = props(replicator.render(replicator.nodes[0]))
    assert not any("interval" in key for key in p)
    assert p["replication.factor"] == "1" and p["west.config.storage.replication.factor"] == "1"


def test_identity_policy_and_custom_separator_are_rendered_and_used_for_names(tmp_path):
    env = environment(tmp_path)
    identity = ReplicationSetup(env, [FlowSpec("east", "west")], policy="identity")
    p = props(mm2(identity).render(mm2(identity).nodes[0]))
    assert p["replication.policy.class"] == "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
    assert identity.remote_topic("east", "orders") == "orders" and identity.remote_prefix("east") == ""
    assert identity.remote_topic("east", "heartbeats") == "east.heartbeats"

    underscore = ReplicationSetup(env, [FlowSpec("east", "west")], separator="_")
    assert props(mm2(underscore).render(mm2(underscore).nodes[0]))["replication.policy.separator"] == "_"
    assert underscore.remote_topic("east", "orders") == "east_orders"
    assert underscore.replication_policy("east").checkpoints_topic("east") == "east_checkpoints_internal"


def test_secrets_are_redacted_in_describe(tmp_path):
    setup = ReplicationSetup(environment(tmp_path), [FlowSpec("east", "west", settings={
        "consumer.sasl.jaas.config": "org.example.Login required password='hunter2';"})])
    described = mm2(setup).describe()
    text = described["processes"][0]["properties"]
    assert "hunter2" not in str(described)
    assert "east->west.consumer.sasl.jaas.config = [redacted]" in text or "consumer.sasl.jaas.config = [redacted]" in text
    assert described["processes"][0]["argv"][described["processes"][0]["argv"].index("-cp") + 1] == "<2 jars in /jars>"


def test_redaction_helpers():
    text = "a.ssl.keystore.password = s3cret\nb.bootstrap.servers = h:1\n# password = comment\n"
    assert redact_properties(text) == "a.ssl.keystore.password = [redacted]\nb.bootstrap.servers = h:1\n# password = comment\n"
    assert redact_argv(["run", "--db-password", "pw", "--token=abc", "sasl.jaas.config=x", "--topic", "t"]) == \
        ["run", "--db-password", "[redacted]", "--token=[redacted]", "sasl.jaas.config=[redacted]", "--topic", "t"]


def test_describe_before_the_environment_runs_says_so(tmp_path):
    spec = TopologySpec((ClusterSpec("east"), ClusterSpec("west")))
    setup = ReplicationSetup(Environment(spec, tmp_path / "env"), [FlowSpec("east", "west")])
    described = mm2(setup).describe()
    assert described["processes"][0]["properties"].startswith("# not rendered yet")


# ======================================================================================
# Setup validation
# ======================================================================================
def test_bad_settings_name_the_flow_and_the_key(tmp_path):
    env = environment(tmp_path)
    with pytest.raises(SetupError, match=r"flow east->west: setting 'tasks\.mx'.*did you mean 'tasks\.max'"):
        ReplicationSetup(env, [FlowSpec("east", "west", settings={"tasks.mx": "2"})])
    with pytest.raises(SetupError, match=r"east->west.*offset\.lag\.max.*whole number"):
        ReplicationSetup(env, [FlowSpec("east", "west", settings={"offset.lag.max": "lots"})])
    with pytest.raises(SetupError, match="without the 'A->B.' prefix"):
        FlowSpec("east", "west", settings={"east->west.tasks.max": "2"})
    with pytest.raises(SetupError, match="set once for the whole setup"):
        FlowSpec("east", "west", settings={"replication.policy.separator": "_"})
    with pytest.raises(SetupError, match="Connect worker"):
        mm2(ReplicationSetup(env, [FlowSpec("east", "west")]), worker_settings={"fetch.min.bytes": "1"})


def test_setup_rejects_impossible_topologies(tmp_path):
    env = environment(tmp_path, names=("east", "west", "north"), links=(("east", "west"),))
    with pytest.raises(SetupError, match=r"unknown cluster 'south'; clusters are \['east', 'west', 'north'\]"):
        ReplicationSetup(env, [FlowSpec("south", "west")])
    with pytest.raises(SetupError, match="no WAN link between 'north' and 'west'"):
        ReplicationSetup(env, [FlowSpec("north", "west")])
    with pytest.raises(SetupError, match="listed twice"):
        ReplicationSetup(env, [FlowSpec("east", "west"), FlowSpec("east", "west", topics=["x"])])
    with pytest.raises(SetupError, match="placement 'middle' is invalid; valid: target, source"):
        FlowSpec("east", "west", placement="middle")  # type: ignore[arg-type]  # the wrong value under test
    with pytest.raises(SetupError, match="onto itself"):
        FlowSpec("east", "east")
    with pytest.raises(SetupError, match="unknown replication policy 'mirror'"):
        ReplicationSetup(env, [FlowSpec("east", "west")], policy="mirror")
    with pytest.raises(SetupError, match="at least one flow"):
        ReplicationSetup(env, [])


def test_separator_must_not_occur_in_cluster_names(tmp_path):
    env = environment(tmp_path, names=("us-east", "us-west"))
    with pytest.raises(SetupError, match="contains the separator '-'"):
        ReplicationSetup(env, [FlowSpec("us-east", "us-west")], separator="-")


def test_setup_settings_reach_the_config_unchanged(tmp_path):
    # The setup writes its settings with the replicator's own properties escaping, so any
    # value survives the trip through the MM2 properties loader.
    value = "#lead\\tab\there # not a comment\nnext line é"
    setup = ReplicationSetup(environment(tmp_path), [FlowSpec("east", "west", settings={"consumer.client.id": value})])
    assert setup.flow_config(setup.flows[0]).consumer["client.id"] == value


def test_flow_ends_are_checked_by_the_replicators_rule():
    with pytest.raises(SetupError, match=r"invalid cluster alias 'no way'"):
        FlowSpec("no way", "west")


def test_topics_regex_joins_like_mm2():
    flow = FlowSpec("east", "west", topics=["orders", "pay.*"], topics_exclude=[])
    assert flow.topics_regex == "orders|pay.*" and flow.topics_exclude_regex == ""
    assert flow.location == "west" and FlowSpec("east", "west", placement="source").location == "east"


# ======================================================================================
# Factory
# ======================================================================================
def test_unknown_kind_lists_the_valid_ones(tmp_path):
    setup = ReplicationSetup(environment(tmp_path), [FlowSpec("east", "west")])
    with pytest.raises(UnknownReplicatorKind) as err:
        make_replicator("mirrormaker", setup)
    assert "did you mean 'mirrormaker2'" in str(err.value)
    assert "valid kinds: " + ", ".join(sorted(REPLICATOR_KINDS)) in str(err.value)


def test_options_are_checked_against_the_adapter(tmp_path):
    setup = ReplicationSetup(environment(tmp_path), [FlowSpec("east", "west")])
    with pytest.raises(SetupError, match=r"replicator 'command' needs option\(s\) 'command'"):
        make_replicator("command", setup)
    with pytest.raises(SetupError, match=r"has no option 'comand' \(did you mean 'command'\?\); its options are: command"):
        make_replicator("command", setup, comand="x")


# ======================================================================================
# Command adapter
# ======================================================================================
def test_unknown_placeholder_is_named_with_the_valid_ones():
    with pytest.raises(CommandTemplateError) as err:
        CommandTemplate.parse("repl --from {source_bootstrap} --to {target_boostrap}", PLACEHOLDERS)
    message = str(err.value)
    assert "unknown placeholder {target_boostrap}" in message
    assert all("{" + name + "}" in message for name in PLACEHOLDERS)


@pytest.mark.parametrize("command, problem", [
    ("repl {}", "positional placeholder"),
    ("repl {0}", "positional placeholder"),
    ("repl {workdir.name}", "takes no attribute or index"),
    ("repl {workdir!r}", "no format spec or conversion"),
    ("repl {workdir:>10}", "no format spec or conversion"),
    ("repl {workdir", "literal brace"),
    ("repl 'unclosed", "cannot split"),
    ("", "is empty"),
])
def test_malformed_templates_are_refused(command, problem):
    with pytest.raises(CommandTemplateError, match=problem):
        CommandTemplate.parse(command, PLACEHOLDERS)


def test_placeholders_are_filled_per_flow_as_single_arguments(tmp_path):
    env = environment(tmp_path, names=("east", "west", "north"))
    setup = ReplicationSetup(env, [FlowSpec("east", "west", topics=["orders", "pay .*"]),
                                   FlowSpec("north", "west", placement="source")])
    replicator = make_replicator("command", setup, command="repl --src {source_bootstrap} --dst {target_bootstrap} "
                                 "--topics {topics_regex} --prefix {remote_prefix} --dir {workdir} --json {{}} "
                                 "--name {source}-to-{target}")
    replicator._prepare()
    east_west, north_west = (replicator.process_for("east", "west"), replicator.process_for("north", "west"))
    assert east_west.argv == ["repl", "--src", env.cluster("east").wan_bootstrap("west"),
                              "--dst", env.cluster("west").bootstrap, "--topics", "orders|pay .*",
                              "--prefix", "east.", "--dir", str(east_west.cwd), "--json", "{}",
                              "--name", "east-to-west"]
    # Placed at the source: the source locally, the target through the WAN.
    assert north_west.argv[2] == env.cluster("north").bootstrap
    assert north_west.argv[4] == env.cluster("west").wan_bootstrap("north")
    assert east_west.env["MIRRORDRILL_REMOTE_PREFIX"] == "east."
    assert east_west.cwd != north_west.cwd and east_west.log_path.parent == east_west.cwd


def test_translate_offsets_needs_a_translation_command(tmp_path):
    setup = ReplicationSetup(environment(tmp_path), [FlowSpec("east", "west")])
    replicator = make_replicator("command", setup, command="repl")
    with pytest.raises(UnsupportedOperation, match="translate_command") as err:
        replicator.translate_offsets("g", "east", "west")
    assert isinstance(err.value, NotImplementedError)


def test_translate_offsets_runs_the_translation_command(tmp_path):
    setup = ReplicationSetup(environment(tmp_path), [FlowSpec("east", "west")])
    script = ("import json, sys; print(json.dumps([dict(topic=sys.argv[1] + 'orders', partition=0, "
              "offset=len(sys.argv[2]))]))")
    replicator = make_replicator("command", setup, command="repl",
                                 translate_command=[sys.executable, "-c", script, "{remote_prefix}", "{group}"])
    assert replicator.translate_offsets("billing", "east", "west") == {("east.orders", 0): 7}
    failing = make_replicator("command", setup, command="repl",
                              translate_command=[sys.executable, "-c", "import sys; sys.exit('no such group')"])
    with pytest.raises(ReplicatorError, match="exited with 1"):
        failing.translate_offsets("billing", "east", "west")
    with pytest.raises(CommandTemplateError, match=r"unknown placeholder \{grop\}"):
        make_replicator("command", setup, command="repl", translate_command="t {grop}")


def test_translation_output_is_checked():
    assert parse_translation('[{"topic": "east.t", "partition": 1, "offset": 5}]', "t") == {("east.t", 1): 5}
    with pytest.raises(ReplicatorError, match="not JSON"):
        parse_translation("offset 5", "t")
    with pytest.raises(ReplicatorError, match="bad entry"):
        parse_translation('[{"topic": "east.t", "partition": "1", "offset": 5}]', "t")
    with pytest.raises(ReplicatorError, match="expected a JSON list"):
        parse_translation('{"east.t": 5}', "t")


# ======================================================================================
# MM2 record formats
# ======================================================================================
def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def test_checkpoint_records_decode():
    key = _string("billing") + _string("east.orders") + struct.pack(">i", 3)
    value = struct.pack(">hqq", 0, 120, 117) + _string("meta")
    cp = Checkpoint.decode(key, value, record_offset=9)
    assert (cp.group, cp.topic, cp.partition, cp.upstream_offset, cp.downstream_offset, cp.metadata, cp.record_offset) \
        == ("billing", "east.orders", 3, 120, 117, "meta", 9)
    with pytest.raises(ValueError, match="truncated checkpoint value"):
        Checkpoint.decode(key, value[:-3])
    with pytest.raises(ValueError, match="unsupported version 1"):
        Checkpoint.decode(key, struct.pack(">hqq", 1, 1, 1) + _string(""))


def test_heartbeat_records_decode():
    hb = Heartbeat.decode(_string("east") + _string("west"), struct.pack(">hq", 0, 1_700_000_000_000))
    assert (hb.source_alias, hb.target_alias, hb.timestamp_ms) == ("east", "west", 1_700_000_000_000)
    assert Heartbeat.decode(hb.key(), hb.value()) == hb  # what our replicator writes, MM2's readers read


def test_plan_groups_by_target_and_location(tmp_path):
    setup = ReplicationSetup(environment(tmp_path), [FlowSpec("east", "west"), FlowSpec("west", "east", placement="source")])
    nodes = plan_nodes(setup, tmp_path / "mm2")
    assert [(n.target, n.location, n.name) for n in nodes] == [
        ("west", "west", "mirrormaker2 west"), ("east", "west", "mirrormaker2 east (at west)")]


# ======================================================================================
# planned moves: MM2's checkpoints must carry the commit before translating
# ======================================================================================
def fake_end_offsets(monkeypatch, replicator, ends: dict[tuple[str, str, int], int]) -> None:
    """Log ends as ``{(cluster, topic, partition): end}``, instead of asking brokers: the source's
    through the lag probe, the target's newest records through the tail reader."""
    def end_offsets(probe, cluster, partitions):
        return {(tp.topic, tp.partition): ends[(cluster, tp.topic, tp.partition)] for tp in partitions
                if (cluster, tp.topic, tp.partition) in ends}
    def ends_after_last_record(bootstrap, partitions, security=None):
        return {(t, p): ends[("west", t, p)] for t, p in partitions if ("west", t, p) in ends}
    monkeypatch.setattr(type(replicator._probe), "end_offsets", end_offsets)
    monkeypatch.setattr("mirrordrill.harness.drill.replicators.mirrormaker2.ends_after_last_record", ends_after_last_record)


def test_mm2_planned_move_waits_until_checkpoints_carry_every_commit(tmp_path, monkeypatch):
    setup = ReplicationSetup(env=environment(tmp_path), flows=[FlowSpec("east", "west", topics=["orders"])],
                             workdir=tmp_path / "mm2")
    replicator = mm2(setup)
    # the group also read a topic the flow does not checkpoint (a cycle): it is not waited for
    commits = {("orders", 0): 500, ("orders", 1): 300, ("west.orders", 0): 9}
    # orders-0 was still being read (its end is past the commit); orders-1 was read to its end, so its
    # exact translation is the remote partition's end, 310
    fake_end_offsets(monkeypatch, replicator, {("east", "orders", 0): 520, ("east", "orders", 1): 300,
                                               ("west", "east.orders", 0): 500, ("west", "east.orders", 1): 310})
    emitted = iter([[], [Checkpoint("billing", "east.orders", 0, 500, 480)],
                    [Checkpoint("billing", "east.orders", 0, 500, 480), Checkpoint("billing", "east.orders", 1, 300, 290)],
                    # MM2 emitted orders-1 again once the delayed offset sync of its last record arrived
                    [Checkpoint("billing", "east.orders", 0, 500, 480), Checkpoint("billing", "east.orders", 1, 300, 290),
                     Checkpoint("billing", "east.orders", 1, 300, 310)]])
    seen = []
    monkeypatch.setattr(type(replicator), "source_commits", lambda self, group, source, target, topics=None:
                        {tp: offset for tp, offset in commits.items() if topics is None or topics(tp[0])})
    monkeypatch.setattr(type(replicator), "checkpoints",
                        lambda self, source, target, group=None: seen.append(1) or next(emitted))
    monkeypatch.setattr("mirrordrill.harness.drill.replicators.mirrormaker2.time.sleep", lambda s: None)
    wait = replicator.await_checkpoints("billing", "east", "west", timeout_s=30)
    assert wait.caught_up and len(seen) == 4  # not at the third read: orders-1 carried the commit but not exactly
    # the third read carried every commit (after 0.0 s: sleeps are skipped here), the fourth translated exactly
    assert wait.detail.startswith("checkpoints carry the commits of 2 partition(s) after 0.0s, "
                                  "translated exactly (1 read to the end) after ")


@pytest.mark.parametrize("ends, checkpoint, says", [
    # the group was still reading (the source end is past its commit): the checkpoint is behind the commit
    ({("east", "orders", 0): 700, ("west", "east.orders", 0): 650}, Checkpoint("billing", "east.orders", 0, 400, 380),
     "behind the commits"),
    # read to the end, and the checkpoint carries the commit but maps it one past an older offset
    # sync: a move from here would replay 50 records
    ({("east", "orders", 0): 500, ("west", "east.orders", 0): 500}, Checkpoint("billing", "east.orders", 0, 500, 450),
     "carrying the commits one past an older offset sync"),
], ids=["commit-not-carried", "carried-but-not-exact-at-the-end"])
def test_mm2_planned_move_says_which_checkpoints_stayed_behind(tmp_path, monkeypatch, ends, checkpoint, says):
    setup = ReplicationSetup(env=environment(tmp_path), flows=[FlowSpec("east", "west", topics=["orders"])],
                             workdir=tmp_path / "mm2")
    replicator = mm2(setup)
    fake_end_offsets(monkeypatch, replicator, ends)
    monkeypatch.setattr(type(replicator), "source_commits", lambda self, group, source, target, topics=None: {("orders", 0): 500})
    monkeypatch.setattr(type(replicator), "checkpoints", lambda self, source, target, group=None: [checkpoint])
    wait = replicator.await_checkpoints("billing", "east", "west", timeout_s=0)
    assert not wait.caught_up
    assert wait.detail == f"checkpoints of 1 of 1 partition(s) still {says} after 0s (e.g. east.orders-0)"


def test_a_drill_file_s_driver_jit_reaches_the_bundled_replicator_s_configuration(tmp_path):
    from mirrordrill.harness.drill.replicators.pyspark import PySparkReplicator
    from mirrordrill.harness.lab.spark.deployment import SparkDeployment, SparkDeploymentError
    from mirrordrill.primitives.bootstrap import Artifacts
    artifacts = Artifacts("java", (), (), (Path("spark-sql-kafka.jar"),), Path("replicator.jar"), Path("toxiproxy"), None)
    scenario = parse_scenario(BASE.replace("replication:\n", "replication:\n  spark: {driver_jit: tiered}\n", 1), "d.yaml")
    spark = Drill(scenario, tmp_path / "d.yaml", tmp_path / "out", replicator="pyspark").spark_deployment()
    assert spark.driver_jit == "tiered"
    setup = ReplicationSetup(environment(tmp_path), [FlowSpec("east", "west")])
    tiered = PySparkReplicator(setup, artifacts=artifacts, spark=spark)
    config = tiered.node_config(tiered.nodes[0], resolve_addresses=False)
    assert config.driver_jit == "tiered" and props(tiered.render(tiered.nodes[0]))["mirrordrill.driver.jit"] == "tiered"
    # unset: the replicator's own default, and nothing written
    plain = PySparkReplicator(setup, artifacts=artifacts)
    assert "mirrordrill.driver.jit" not in props(plain.render(plain.nodes[0]))
    with pytest.raises(SparkDeploymentError, match="driver_jit 'c2' is not one of: c1, tiered"):
        SparkDeployment(driver_jit="c2")
