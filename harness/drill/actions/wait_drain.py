"""wait_drain: wait until replication has caught up (lag zero) before the next step."""

from __future__ import annotations

from mirrordrill.harness.drill import failover
from mirrordrill.harness.drill.actions.base import Action, NotUndoable, StepFacts
from mirrordrill.harness.drill.context import DrillContext
from mirrordrill.harness.drill.schema_timeline import WaitDrain


class WaitDrainAction(Action):
    step_type = WaitDrain
    facts = {"wait_drain": StepFacts(fault=False)}

    def apply(self, ctx: DrillContext, step: WaitDrain) -> str:
        lag = failover.wait_drained(ctx, step.flow, step.timeout)
        return "drained" if lag == 0 else f"still {lag} records behind after {step.timeout:g}s"

    def undo(self, ctx: DrillContext, step: WaitDrain) -> str:
        raise NotUndoable("wait_drain has no inverse: waiting changes nothing")
