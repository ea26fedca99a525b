"""A fault, a replicator and a metric added from this module alone, through the registries'
API, and a real drill that uses all three: the drill file accepts the new step, replicator and
expectation; the engine runs them on real brokers; the invariants, the report labels, the run
folder and the judging read their declared facts. No product module names any of them."""

from __future__ import annotations

import json
from typing import Literal

import pytest

from mirrordrill.harness.drill.actions.base import StepFacts
from mirrordrill.harness.drill.actions.link_action import LinkAction
from mirrordrill.harness.drill.actions.registry import register_action, unregister_action
from mirrordrill.harness.drill.engine import Drill
from mirrordrill.harness.drill.metrics import Metric, register_metric, unregister_metric
from mirrordrill.harness.drill.replicators import RunInputs, register_replicator_kind, unregister_replicator_kind
from mirrordrill.harness.drill.replicators.command import CommandReplicator
from mirrordrill.harness.drill.schema_timeline import _LinkStep
from mirrordrill.harness.drill.validate import ScenarioInvalid, parse_scenario
from mirrordrill.harness.lab.network.wan import LinkConditions
from mirrordrill.reports.labels import faults
from tests.conftest import processes_under
from tests.integration.test_command_replicator import COMMAND

pytestmark = pytest.mark.integration


class JamLink(_LinkStep):
    """The new fault's step model: a WAN link slowed to ``latency_ms`` until healed."""

    do: Literal["jam_link"]
    latency_ms: int = 400


class JamLinkAction(LinkAction):
    step_type = JamLink
    # requests slowed past the clients' timeouts are sent again
    facts = {"jam_link": StepFacts(duplicates=True)}

    def apply(self, ctx, step: JamLink) -> str:
        ctx.env.link(*step.link).set(LinkConditions(latency_ms=step.latency_ms))
        return f"jammed at {step.latency_ms} ms"

    def undo(self, ctx, step: JamLink) -> str:
        return self.heal_link(ctx, step)


class PipeReplicator(CommandReplicator):
    """The test fixture's confluent-kafka pipe as a replicator kind of its own."""

    kind = "pipe"

    @classmethod
    def options_for(cls, replication, run: RunInputs) -> dict:
        return {"command": COMMAND, "ready_pattern": r"pipe replicator: subscribed", "base_dir": run.base_dir}

    @classmethod
    def version(cls) -> str:
        return "pipe 0.1 (tests/integration/fixtures/pipe_replicator.py)"

    @classmethod
    def delivery_mode(cls, mode: str | None, exactly_once: bool) -> str:
        return "at-least-once"


COPIED_SHARE = Metric("copied_share", "fraction", higher_is_better=True,
                      reader=lambda f: round(f.replicated / f.acked, 4) if f.acked else None)

DRILL = """\
name: registries
clusters: {primary: {brokers: 1}, dr: {brokers: 1}}
links: [{between: [primary, dr], latency_ms: 5}]
topics: [{name: cmdt-orders, cluster: primary, partitions: 2}]
replication:
  replicator: pipe
  flows: [{source: primary, target: dr, topics: [cmdt-orders]}]
load:
  producers: [{name: orders, cluster: primary, topics: [cmdt-orders], rate: 100, record_size: {fixed: 256}}]
duration: 10s
drain_timeout: 45s
timeline:
  - {at: 3s, do: jam_link, link: [primary, dr], latency_ms: 300}
  - {at: 6s, do: heal, link: [primary, dr]}
invariants: {duplicates: 1000}
expectations:
  lost: 0
  copied_share: ">= 0.99"
"""


@pytest.fixture
def registered():
    register_action(JamLinkAction)
    register_replicator_kind("pipe", PipeReplicator)
    register_metric(COPIED_SHARE)
    try:
        yield
    finally:
        unregister_metric(COPIED_SHARE.name)
        unregister_replicator_kind("pipe")
        unregister_action(JamLinkAction)


def test_a_fault_a_replicator_and_a_metric_registered_here_run_a_drill_on_real_brokers(registered, tmp_path):
    # the fault's declared facts reach the invariants: a jam may repeat records, so a bound is needed
    with pytest.raises(ScenarioInvalid, match="after this jam_link at-least-once delivery may copy records twice"):
        parse_scenario(DRILL.replace("invariants: {duplicates: 1000}\n", ""), "drill.yaml")
    path = tmp_path / "registries.yaml"
    path.write_text(DRILL)
    scenario = parse_scenario(DRILL, str(path))
    assert isinstance(scenario.timeline[0], JamLink)

    result = Drill(scenario, path, tmp_path / "run").run()

    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["error"] is None, summary["error"]
    assert (summary["replicator"], summary["replicator_mode"]) == ("pipe", "at-least-once")
    assert summary["versions"]["replicator"] == "pipe 0.1 (tests/integration/fixtures/pipe_replicator.py)"
    jam = next(e for e in summary["timeline"] if e["kind"] == "jam_link")
    assert (jam["name"], jam["outcome"], jam["detail"]) == ("jam_link primary<->dr", "ok", "jammed at 300 ms")
    rows = {e["name"]: e for e in summary["expectations"]}
    share = rows["copied_share[primary->dr] >= 0.99"]
    assert share["passed"] and share["actual"] >= 0.99, share
    assert rows["invariant no_duplicates: duplicates[primary->dr] <= 1000"]["passed"]
    assert faults(result) == ["jam_link"]  # heal ends the fault: its action says it is none
    assert summary["passed"] is True, [e for e in summary["expectations"] if not e["passed"]]
    assert processes_under(tmp_path) == []
