"""runbook: run one of the team's own commands (a DNS switch, a config push, a check) as a step."""

from __future__ import annotations

from mirrordrill.harness.drill import runbook
from mirrordrill.harness.drill.actions.base import Action, NotUndoable, StepProblem, TimelineFacts
from mirrordrill.harness.drill.context import DrillContext
from mirrordrill.harness.drill.schema_timeline import RunbookStep


class RunbookAction(Action):
    step_type = RunbookStep

    def describe(self, step: RunbookStep) -> str:
        return f"runbook {runbook.describe_command(step.command)}"

    def validate(self, step: RunbookStep, facts: TimelineFacts) -> list[StepProblem]:
        failover = runbook.failover_before([*facts.earlier, step], step)
        return [StepProblem(field, message)
                for field, message in runbook.definition_problems(step, facts.drill_dir, facts.scenario, failover)]

    def apply(self, ctx: DrillContext, step: RunbookStep) -> str:
        name = step.name or runbook.describe_command(step.command)
        return runbook.run_command(ctx, step, name, runbook.failover_before(ctx.scenario.timeline, step))

    def undo(self, ctx: DrillContext, step: RunbookStep) -> str:
        raise NotUndoable("a runbook command has no inverse the harness knows of; add the command that undoes it "
                          "as another runbook step")
