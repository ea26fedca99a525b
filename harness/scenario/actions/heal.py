"""heal: a WAN link is clean again -- proxies up, every condition removed, held data delivered."""

from __future__ import annotations

from harness.scenario.actions.base import NotUndoable
from harness.scenario.actions.link_action import LinkAction
from harness.scenario.context import DrillContext
from harness.scenario.model import Heal


class HealAction(LinkAction):
    step_type = Heal

    def apply(self, ctx: DrillContext, step: Heal) -> str:
        return self.heal_link(ctx, step)

    def undo(self, ctx: DrillContext, step: Heal) -> str:
        raise NotUndoable("heal has no inverse: it does not know which fault it ended; "
                          "run that fault again instead")
