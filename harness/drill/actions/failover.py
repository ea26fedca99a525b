"""planned_failover, unplanned_failover: move producers and consumers from a primary to its DR cluster."""

from __future__ import annotations

from collections.abc import Collection

from mirrordrill.harness.drill import failover, runbook
from mirrordrill.harness.drill.actions.base import NotUndoable, StepFacts, StepProblem, TimelineFacts
from mirrordrill.harness.drill.actions.move_action import MoveAction
from mirrordrill.harness.drill.context import DrillContext
from mirrordrill.harness.drill.schema_timeline import Failback, Failover


class FailoverAction(MoveAction):
    step_type = Failover
    # the primary dies (or is cut off) with records it acknowledged and had not yet replicated
    facts = {"unplanned_failover": StepFacts(loses=True, duplicates=True)}

    def lost_cluster(self, step: Failover) -> str | None:
        return step.source if self.facts_of(step.do).loses else None

    def existing_cluster_problems(self, step: Failover, existing: Collection[str],
                                  owned_prefix: str) -> list[StepProblem]:
        if step.do == "unplanned_failover" and step.how == "kill" and step.source in existing:
            return [StepProblem(("how",), f"how: kill would SIGKILL the brokers of {step.source}, an existing "
                                          "cluster; use how: partition, which cuts the harness's proxies to it")]
        return []

    def validate(self, step: Failover, facts: TimelineFacts) -> list[StepProblem]:
        return super().validate(step, facts) + [
            StepProblem(("runbook", i) + field, message) for i, command in enumerate(step.runbook)
            for field, message in runbook.definition_problems(command, facts.drill_dir, facts.scenario,
                                                              runbook.failover_of(step))]

    def validate_pair(self, step: Failover, facts: TimelineFacts) -> list[StepProblem]:
        if f"{step.source}->{step.target}" in facts.flows:
            moves = [p for p in facts.earlier if isinstance(p, (Failover, Failback))]
            if moves and isinstance(moves[-1], Failover) and (moves[-1].source, moves[-1].target) == (step.source, step.target):
                return [StepProblem((), f"the applications already failed over from {step.source} to {step.target} "
                                        "in an earlier step and have not come back; put a failback step with "
                                        "switch_back: true in between")]
            return []
        return [StepProblem((), f"no flow {step.source}->{step.target} to fail over along; "
                                f"flows are {sorted(facts.flows)}")]

    def apply(self, ctx: DrillContext, step: Failover) -> str:
        return failover.planned(ctx, step) if step.do == "planned_failover" else failover.unplanned(ctx, step)

    def undo(self, ctx: DrillContext, step: Failover) -> str:
        raise NotUndoable(f"{step.do} is undone by a failback step ({step.target}->{step.source}): "
                          f"the old primary must be rebuilt from the new one before applications return")
