"""failback: rebuild the old primary from the new one, check they converge, optionally switch back."""

from __future__ import annotations

from mirrordrill.harness.drill import failback
from mirrordrill.harness.drill.actions.base import NotUndoable, StepFacts, StepProblem, TimelineFacts
from mirrordrill.harness.drill.actions.move_action import MoveAction
from mirrordrill.harness.drill.context import DrillContext
from mirrordrill.harness.drill.schema_timeline import Failback, Failover


class FailbackAction(MoveAction):
    step_type = Failback
    # the copy back is stopped and another replicator started: at-least-once at each hand-over
    facts = {"failback": StepFacts(duplicates=True)}

    def validate_pair(self, step: Failback, facts: TimelineFacts) -> list[StepProblem]:
        failed_over = {(f.source, f.target) for f in facts.earlier if isinstance(f, Failover)}
        if (step.target, step.source) not in failed_over:
            return [StepProblem((), f"failback {step.source}->{step.target} needs an earlier failover "
                                    f"from {step.target} to {step.source} in the timeline")]
        if others := sorted(facts.flows - {f"{step.target}->{step.source}"}):
            return [StepProblem((), f"failback rebuilds one active/passive pair: the replicator running "
                                    f"{step.target}->{step.source} is stopped with it, so the drill may have no "
                                    f"other flows (found {others})")]
        return []

    def apply(self, ctx: DrillContext, step: Failback) -> str:
        return failback.run(ctx, step)

    def undo(self, ctx: DrillContext, step: Failback) -> str:
        raise NotUndoable("failback has no inverse: the old primary's wiped data cannot be brought back")
