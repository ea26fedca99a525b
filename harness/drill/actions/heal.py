"""heal: a WAN link is clean again -- proxies up, every condition removed, held data delivered."""

from __future__ import annotations

from harness.drill.actions.base import NotUndoable, StepFacts, StepProblem, TimelineFacts
from harness.drill.actions.link_action import LinkAction
from harness.drill.context import DrillContext
from harness.drill.schema import Heal


class HealAction(LinkAction):
    step_type = Heal
    facts = {"heal": StepFacts(restores_flow=True, fault=False)}

    def validate(self, step: Heal, facts: TimelineFacts) -> list[StepProblem]:
        problems = super().validate(step, facts)
        if step.direction is not None:
            # accepted and ignored, it would make the drill look one-way when it is not
            problems.append(StepProblem(("direction",),
                                        "heal ends every fault on the link in both directions; remove 'direction'"))
        return problems

    def apply(self, ctx: DrillContext, step: Heal) -> str:
        return self.heal_link(ctx, step)

    def undo(self, ctx: DrillContext, step: Heal) -> str:
        raise NotUndoable("heal has no inverse: it does not know which fault it ended; "
                          "run that fault again instead")
