"""partition: a hard network partition -- a WAN link's proxies down, connections closed and refused."""

from __future__ import annotations

from mirrordrill.harness.drill.actions.base import StepFacts
from mirrordrill.harness.drill.actions.link_action import LinkAction
from mirrordrill.harness.drill.context import DrillContext
from mirrordrill.harness.drill.schema_timeline import Partition


class PartitionAction(LinkAction):
    step_type = Partition
    # connections close mid-request: a write may have landed before its answer was lost
    facts = {"partition": StepFacts(duplicates=True, stops_flow=True)}
    whole_link = "a hard partition cuts TCP both ways; use blackhole for one direction"
    whole_link_accepts_both = True

    def apply(self, ctx: DrillContext, step: Partition) -> str:
        ctx.env.link(*step.link).partition()
        return "proxies down"

    def undo(self, ctx: DrillContext, step: Partition) -> str:
        return self.heal_link(ctx, step)
