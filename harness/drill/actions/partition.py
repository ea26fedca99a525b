"""partition: a hard network partition -- a WAN link's proxies down, connections closed and refused."""

from __future__ import annotations

from harness.drill.actions.base import StepFacts, StepProblem, TimelineFacts
from harness.drill.actions.link_action import LinkAction
from harness.drill.context import DrillContext
from harness.drill.schema import Partition


class PartitionAction(LinkAction):
    step_type = Partition
    # connections close mid-request: a write may have landed before its answer was lost
    facts = {"partition": StepFacts(duplicates=True, stops_flow=True)}

    def validate(self, step: Partition, facts: TimelineFacts) -> list[StepProblem]:
        problems = super().validate(step, facts)
        if step.direction not in (None, "both"):
            problems.append(StepProblem(("direction",), "a hard partition cuts TCP both ways; "
                                                        "use blackhole for one direction"))
        return problems

    def apply(self, ctx: DrillContext, step: Partition) -> str:
        ctx.env.link(*step.link).partition()
        return "proxies down"

    def undo(self, ctx: DrillContext, step: Partition) -> str:
        return self.heal_link(ctx, step)
