"""kill_replicator, stop_replicator, start_replicator, restart_replicator, pause_replicator, resume_replicator."""

from __future__ import annotations

from mirrordrill.harness.drill.actions.base import StepFacts
from mirrordrill.harness.drill.actions.lifecycle_action import LifecycleAction
from mirrordrill.harness.drill.context import DrillContext
from mirrordrill.harness.drill.schema_timeline import ReplicatorStep


class ReplicatorAction(LifecycleAction):
    """On the replicator running now (after a failback: the copy back or the re-protecting one)."""

    step_type = ReplicatorStep
    noun = "replicator"
    # A replicator that dies or restarts mid-write copies again what it had not yet committed as done.
    facts = {
        "kill_replicator": StepFacts(duplicates=True, stops_flow=True),
        "stop_replicator": StepFacts(duplicates=True, stops_flow=True),
        "pause_replicator": StepFacts(stops_flow=True),
        "restart_replicator": StepFacts(duplicates=True, restores_flow=True),
        "start_replicator": StepFacts(restores_flow=True),
        "resume_replicator": StepFacts(restores_flow=True),
    }

    def run(self, ctx: DrillContext, step: ReplicatorStep, verb: str) -> None:
        replicator = ctx.replicator
        if verb == "restart":
            replicator.restart(hard=False)
        else:
            getattr(replicator, verb)()
