"""heal: a WAN link is clean again -- proxies up, every condition removed, held data delivered."""

from __future__ import annotations

from mirrordrill.harness.drill.actions.base import NotUndoable, StepFacts
from mirrordrill.harness.drill.actions.link_action import LinkAction
from mirrordrill.harness.drill.context import DrillContext
from mirrordrill.harness.drill.schema_timeline import Heal


class HealAction(LinkAction):
    step_type = Heal
    facts = {"heal": StepFacts(restores_flow=True, fault=False)}
    whole_link = "heal ends every fault on the link in both directions; remove 'direction'"

    def apply(self, ctx: DrillContext, step: Heal) -> str:
        return self.heal_link(ctx, step)

    def undo(self, ctx: DrillContext, step: Heal) -> str:
        raise NotUndoable("heal has no inverse: it does not know which fault it ended; "
                          "run that fault again instead")
