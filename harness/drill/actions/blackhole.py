"""blackhole: a WAN link holds all data (connections stay open) until healed."""

from __future__ import annotations

from mirrordrill.harness.drill.actions.base import StepFacts
from mirrordrill.harness.drill.actions.link_action import LinkAction
from mirrordrill.harness.drill.context import DrillContext
from mirrordrill.harness.drill.schema_timeline import Blackhole


class BlackholeAction(LinkAction):
    step_type = Blackhole
    # requests held mid-flight may time out and be sent again once the link is healed
    facts = {"blackhole": StepFacts(duplicates=True, stops_flow=True)}

    def apply(self, ctx: DrillContext, step: Blackhole) -> str:
        ctx.env.link(*step.link).blackhole(step.direction)
        return "data held"

    def undo(self, ctx: DrillContext, step: Blackhole) -> str:
        return self.heal_link(ctx, step)
