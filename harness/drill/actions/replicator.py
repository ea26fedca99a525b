"""kill_replicator, stop_replicator, start_replicator, restart_replicator, pause_replicator, resume_replicator."""

from __future__ import annotations

from harness.drill.actions.lifecycle_action import LifecycleAction
from harness.drill.context import DrillContext
from harness.drill.schema import ReplicatorStep


class ReplicatorAction(LifecycleAction):
    """On the replicator running now (after a failback: the copy back or the re-protecting one)."""

    step_type = ReplicatorStep
    noun = "replicator"

    def run(self, ctx: DrillContext, step: ReplicatorStep, verb: str) -> None:
        replicator = ctx.replicator
        if verb == "restart":
            replicator.restart(hard=False)
        else:
            getattr(replicator, verb)()
