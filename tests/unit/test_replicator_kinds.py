"""Replicator kinds come from one registry, their facts from the adapter class: a kind registered
in code or installed through the ``mirrordrill.replicators`` entry point is accepted by the drill
file, the CLI and the run folder like a built-in one, and the built-in ones keep their facts."""

from __future__ import annotations

from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

import mirrordrill.harness.drill.replicators as kinds
from mirrordrill.harness.cli.commands import build_parser
from mirrordrill.harness.drill import run_facts
from mirrordrill.harness.drill.replicators import (
    REPLICATOR_KINDS,
    FlowSpec,
    ReplicationSetup,
    RunInputs,
    make_replicator,
    register_replicator_kind,
    replicator_class,
    replicator_kinds,
    sweepable_kinds,
    unregister_replicator_kind,
)
from mirrordrill.harness.drill.replicators.command import CommandReplicator
from mirrordrill.harness.drill.schema import Scenario
from mirrordrill.harness.drill.validate import ScenarioInvalid, check_text, parse_scenario
from tests.unit.test_replicator_adapters import environment

DRILL = """\
name: t
clusters: {a: {}, b: {}}
topics: [{name: orders, cluster: a}]
replication: {replicator: KIND, flows: [{source: a, target: b}]}
load: {producers: [{cluster: a, topics: [orders], rate: 10}]}
duration: 20s
"""


class EchoReplicator(CommandReplicator):
    """A user's replicator run as a command, with its own name, version and delivery."""

    kind = "echo"
    reads_fields = frozenset({"command"})

    @classmethod
    def options_for(cls, replication, run: RunInputs) -> dict:
        return {"command": replication.command or "echo-replicator {source}", "base_dir": run.base_dir}

    @classmethod
    def version(cls) -> str:
        return "echo 1.0"

    @classmethod
    def delivery_mode(cls, mode: str | None, exactly_once: bool) -> str:
        return "at-most-once"


@pytest.fixture
def echo():
    register_replicator_kind("echo", EchoReplicator)
    yield EchoReplicator
    unregister_replicator_kind("echo")


def test_a_registered_kind_is_accepted_by_the_drill_file_and_refused_once_unregistered(echo):
    s = parse_scenario(DRILL.replace("KIND", "echo"), "d.yaml")
    assert s.replication.replicator == "echo"
    assert replicator_kinds() == ("pyspark", "mirrormaker2", "command", "mirrormaker1", "echo")
    field = Scenario.model_json_schema()["$defs"]["ReplicationDef"]["properties"]["replicator"]
    assert field["enum"] == ["pyspark", "mirrormaker2", "command", "mirrormaker1", "echo"]  # editors offer it too
    unregister_replicator_kind("echo")
    with pytest.raises(ScenarioInvalid) as err:
        parse_scenario(DRILL.replace("KIND", "echo"), "d.yaml")
    [problem] = err.value.problems
    assert problem.message == "'echo' is not valid here; valid values: pyspark, mirrormaker2, command, mirrormaker1"
    register_replicator_kind("echo", EchoReplicator)  # the fixture's teardown takes it away again


def test_a_taken_name_is_refused_and_a_built_in_kind_stays(echo):
    with pytest.raises(TypeError, match="'pyspark' is registered already"):
        register_replicator_kind("pyspark", EchoReplicator)
    unregister_replicator_kind("pyspark")
    assert replicator_class("pyspark").kind == "pyspark"


def test_the_run_folder_and_the_options_come_from_the_adapter_class(echo, tmp_path):
    assert run_facts.versions("echo")["replicator"] == "echo 1.0"
    assert run_facts.replicator_mode("echo", "realtime") == "at-most-once"
    s = parse_scenario(DRILL.replace("KIND", "echo"), "d.yaml")
    run = RunInputs(artifacts=None, spark=lambda: pytest.fail("echo runs no Spark"), base_dir=tmp_path)
    setup = ReplicationSetup(environment(tmp_path, names=("a", "b")), [FlowSpec("a", "b")])
    replicator = make_replicator("echo", setup, **replicator_class("echo").options_for(s.replication, run))
    assert isinstance(replicator, EchoReplicator)


def test_fields_a_kind_does_not_read_are_warned_about(echo):
    text = DRILL.replace("KIND", "echo").replace("flows:", "mode: realtime, shell: true, flows:")
    warnings = [w.message for w in check_text(text, "d.yaml").warnings]
    assert "mode applies to the pyspark replicator only; echo ignores it" in warnings
    assert "shell applies to the command replicator only; echo ignores it" in warnings


def test_the_cli_offers_every_kind_and_calibrate_the_sweepable_ones(echo):
    parser = build_parser()
    assert parser.parse_args(["run", "d.yaml", "--replicator", "echo"]).replicator == "echo"
    with pytest.raises(SystemExit):
        parser.parse_args(["calibrate", "d.yaml", "--replicator", "echo"])
    assert sweepable_kinds() == ("pyspark", "mirrormaker2", "mirrormaker1")


def test_the_built_in_kinds_come_through_mirrordrills_own_entry_points():
    ours = {ep.name: ep.value for ep in kinds.entry_points(group=kinds.ENTRY_POINT_GROUP)
            if ep.dist is not None and ep.dist.name == "mirrordrill"}
    assert set(kinds.BUILT_IN_KINDS) <= set(ours)
    assert {kind: REPLICATOR_KINDS[kind] for kind in kinds.BUILT_IN_KINDS} == {
        kind: ours[kind] for kind in kinds.BUILT_IN_KINDS}


def test_a_stale_metadata_folder_on_the_path_does_not_hide_the_built_in_kinds(tmp_path, monkeypatch):
    # what an older build leaves in a checkout: mirrordrill's metadata without the group
    stale = tmp_path / "mirrordrill.egg-info"
    stale.mkdir()
    (stale / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: mirrordrill\nVersion: 0.0.1\n")
    (stale / "entry_points.txt").write_text("[console_scripts]\nmirrordrill = harness.cli.commands:main\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    kinds._register_entry_points()
    assert replicator_kinds()[:4] == kinds.BUILT_IN_KINDS


def test_without_mirrordrills_metadata_the_registry_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(kinds, "entry_points", lambda group: [])
    with pytest.raises(kinds.MissingBuiltInKinds, match="pyspark, mirrormaker2, command, mirrormaker1: .*install the package"):
        kinds._register_entry_points()


def test_an_installed_package_adds_a_kind_through_its_entry_point(monkeypatch):
    # an imposter listed before mirrordrill's own entry point still cannot take a built-in name
    installed = [EntryPoint("pyspark", "elsewhere:Imposter", kinds.ENTRY_POINT_GROUP),
                 *kinds.entry_points(group=kinds.ENTRY_POINT_GROUP),
                 EntryPoint("echo", "tests.unit.test_replicator_kinds:EchoReplicator", kinds.ENTRY_POINT_GROUP)]
    asked = []
    monkeypatch.setattr(kinds, "entry_points", lambda group: asked.append(group) or installed)
    try:
        with pytest.warns(UserWarning, match="entry point 'pyspark' .* is left out"):
            kinds._register_entry_points()
        assert asked == ["mirrordrill.replicators"]
        assert REPLICATOR_KINDS["echo"] == "tests.unit.test_replicator_kinds:EchoReplicator"
        assert replicator_class("echo") is EchoReplicator
        assert replicator_class("pyspark").__name__ == "PySparkReplicator"
    finally:
        unregister_replicator_kind("echo")


def test_the_built_in_kinds_keep_their_facts(tmp_path):
    assert replicator_kinds() == ("pyspark", "mirrormaker2", "command", "mirrormaker1")
    spark = replicator_class("pyspark")
    assert spark.uses_spark and spark.sweepable and spark.reads_fields == {"mode", "spark", "standby"}
    assert replicator_class("mirrormaker2").sweepable and not replicator_class("mirrormaker2").uses_spark
    assert not replicator_class("command").sweepable
    s = parse_scenario(DRILL.replace("KIND", "pyspark").replace("flows:", "mode: realtime, flows:"), "d.yaml")
    run = RunInputs(artifacts=None, spark=lambda: "the deployment", base_dir=Path("/drills"))
    assert spark.options_for(s.replication, run) == {"mode": "realtime", "spark": "the deployment"}
    command = parse_scenario(DRILL.replace("KIND", "command").replace("flows:", "command: 'cat {source}', flows:"),
                             "d.yaml")
    assert replicator_class("command").options_for(command.replication, run) == \
        {"command": "cat {source}", "shell": False, "base_dir": Path("/drills")}
    mm1 = replicator_class("mirrormaker1")
    streams = parse_scenario(DRILL.replace("KIND", "mirrormaker1").replace("flows:", "mirrormaker1: {streams: 4}, policy: identity, flows:"),
                             "d.yaml")
    assert mm1.options_for(streams.replication, run) == {"streams": 4, "nodes": 1}
    assert mm1.version() == "MirrorMaker 1 (Kafka 3.9.1)" and mm1.reads_fields == {"mirrormaker1"}
