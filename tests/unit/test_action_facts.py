"""A fault's facts live on its action: the drill file, the invariants, the sweep's catch-up, the
report labels and the existing-cluster rules read them, so a fault registered from outside the
product is judged like a built-in one, and the built-in ones keep the facts they always had."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Literal

import pytest

from mirrordrill.harness.drill.actions.base import StepFacts
from mirrordrill.harness.drill.actions.cluster_action import ClusterAction
from mirrordrill.harness.drill.actions.registry import ACTIONS, register_action, step_facts, unregister_action
from mirrordrill.harness.drill.checker.contract import SecondSeries
from mirrordrill.harness.drill.invariants import loss_faults, repeat_faults
from mirrordrill.harness.drill.schema_timeline import StepBase
from mirrordrill.harness.drill.validate import ScenarioInvalid, parse_scenario
from mirrordrill.harness.tools.sweep.measure import catch_up_of
from mirrordrill.reports.labels import faults
from tests.unit.test_existing_clusters import DRILL as EXISTING_DRILL
from tests.unit.test_existing_clusters import problems as existing_problems

DRILL = """\
name: t
clusters: {primary: {}, dr: {}}
topics: [{name: orders, cluster: primary}]
replication: {flows: [{source: primary, target: dr}]}
load: {producers: [{cluster: primary, topics: [orders], rate: 10}]}
duration: 20s
invariants: {rpo_records: 100, duplicates: 100}
timeline:
"""


class FloodStep(StepBase):
    do: Literal["flood_disk", "drain_disk"]
    cluster: str
    fill_percent: int = 90


class FloodAction(ClusterAction):
    """A fault that fills a cluster's disks: its brokers stop taking writes and what they hold may be lost."""

    step_type = FloodStep
    refused_on_existing = True
    facts = {"flood_disk": StepFacts(loses=True, duplicates=True, stops_flow=True),
             "drain_disk": StepFacts(restores_flow=True, fault=False)}

    def apply(self, ctx, step) -> str:
        return "flooded"

    def undo(self, ctx, step) -> str:
        return "drained"


@pytest.fixture
def flood():
    register_action(FloodAction)
    yield FloodAction
    unregister_action(FloodAction)


def test_a_registered_step_joins_the_drill_file_and_leaves_it_when_unregistered(flood):
    text = DRILL + "  - {at: 5s, do: flood_disk, cluster: primary, fill_percent: 95}\n"
    step = parse_scenario(text, "d.yaml").timeline[0]
    assert isinstance(step, FloodStep) and step.fill_percent == 95
    assert isinstance(ACTIONS["flood_disk"], FloodAction)
    unregister_action(FloodAction)
    with pytest.raises(ScenarioInvalid, match="flood_disk"):
        parse_scenario(text, "d.yaml")
    assert "flood_disk" not in ACTIONS
    register_action(FloodAction)  # the fixture's teardown takes it away again


def test_a_do_name_taken_twice_is_refused_and_nothing_changes(flood):
    class Twice(FloodAction):
        pass

    with pytest.raises(TypeError, match="'flood_disk' is handled by both FloodAction and Twice"):
        register_action(Twice)
    assert type(ACTIONS["flood_disk"]) is FloodAction


def test_the_invariants_read_a_registered_faults_facts(flood):
    s = parse_scenario(DRILL + "  - {at: 5s, do: flood_disk, cluster: primary}\n"
                               "  - {at: 9s, do: drain_disk, cluster: primary}\n"
                               "  - {at: 9s, do: flood_disk, cluster: dr}\n", "d.yaml")
    assert [(f.index, f.kind) for f in repeat_faults(s)] == [(0, "flood_disk"), (2, "flood_disk")]
    # dr is no flow's source: flooding it loses nothing a flow still had to copy
    assert [(f.index, f.cluster) for f in loss_faults(s)] == [(0, "primary")]
    with pytest.raises(ScenarioInvalid, match="this flood_disk kills or cuts off primary"):
        parse_scenario(DRILL.replace("rpo_records: 100, ", "") + "  - {at: 5s, do: flood_disk, cluster: primary}\n",
                       "d.yaml")


def test_the_sweeps_catch_up_and_the_report_labels_read_a_registered_faults_facts(flood):
    lag = [20] * 10 + [200 * i for i in range(1, 11)] + [1500, 900, 300, 90, 20, 20]
    series = SimpleNamespace(lag=SecondSeries(100, tuple(lag)))
    event = lambda kind, ts: SimpleNamespace(kind=kind, start_ts_ms=ts, end_ts_ms=ts + 20)  # noqa: E731
    timeline = [event("flood_disk", 110_000), event("drain_disk", 120_480), event("drain", 125_000)]
    assert catch_up_of(series, timeline) == 2.5  # the lag is back under 100 at second 123
    run = SimpleNamespace(summary=SimpleNamespace(timeline=timeline))
    assert faults(run) == ["flood_disk"]  # drain_disk ends the fault, the engine's drain is none


def test_the_existing_cluster_rules_read_a_registered_faults_facts(flood):
    found = existing_problems(EXISTING_DRILL + "  - {at: 12s, do: flood_disk, cluster: md-t-dr}\n")
    assert any(p.startswith("timeline[1].do: flood_disk on md-t-dr is refused") for p in found), found


def test_the_built_in_faults_keep_their_facts():
    def dos(fact: str) -> set[str]:
        return {do for do in ACTIONS if getattr(step_facts(do), fact)}

    assert dos("duplicates") == {"kill_replicator", "stop_replicator", "restart_replicator", "kill_spark_worker",
                                 "kill_replicator_node", "bounce_replicator_node", "pause_replicator_node",
                                 "kill_broker", "stop_broker", "restart_broker", "kill_cluster", "stop_cluster",
                                 "restart_cluster", "partition", "blackhole", "reset_connections",
                                 "unplanned_failover", "failback"}
    assert dos("loses") == {"unplanned_failover", "kill_cluster", "stop_cluster"}
    assert dos("stops_flow") == {"blackhole", "partition", "kill_replicator", "stop_replicator", "pause_replicator"}
    assert dos("restores_flow") == {"heal", "start_replicator", "resume_replicator", "restart_replicator"}
    assert {do for do in ACTIONS if not step_facts(do).fault} == {"heal", "wait_drain"}
    assert step_facts("drain") is None  # the engine's own entry, no step


def test_a_set_link_repeats_only_when_it_resets_connections():
    s = parse_scenario(DRILL + "  - {at: 5s, do: set_link, link: [primary, dr], latency_ms: 50}\n"
                               "  - {at: 6s, do: set_link, link: [primary, dr], reset_after_ms: 500}\n", "d.yaml")
    assert [f.index for f in repeat_faults(s)] == [1]
