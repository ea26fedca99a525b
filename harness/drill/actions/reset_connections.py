"""reset_connections: every open connection over a WAN link is closed once; clients reconnect at once."""

from __future__ import annotations

from mirrordrill.harness.drill.actions.base import NotUndoable, StepFacts
from mirrordrill.harness.drill.actions.link_action import LinkAction
from mirrordrill.harness.drill.context import DrillContext
from mirrordrill.harness.drill.schema_timeline import ResetConnections


class ResetConnectionsAction(LinkAction):
    step_type = ResetConnections
    facts = {"reset_connections": StepFacts(duplicates=True)}  # closed mid-request, then retried
    whole_link = "reset_connections closes the link's connections, which carry both directions; remove 'direction'"

    def apply(self, ctx: DrillContext, step: ResetConnections) -> str:
        ctx.env.link(*step.link).reset_connections()
        return "connections reset"

    def undo(self, ctx: DrillContext, step: ResetConnections) -> str:
        raise NotUndoable("reset_connections has no inverse: closed connections are not reopened, "
                          "clients reconnect by themselves")
