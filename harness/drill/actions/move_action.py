"""What failover and failback share: they move the drill's applications between two clusters."""

from __future__ import annotations

from mirrordrill.harness.drill.actions.base import Action, StepProblem, TimelineFacts


class MoveAction(Action):
    """A step ``from`` one cluster ``to`` another."""

    def describe(self, step) -> str:
        return f"{step.do} {step.source}->{step.target}"

    def validate(self, step, facts: TimelineFacts) -> list[StepProblem]:
        unknown = facts.unknown_cluster(("from",), step.source) + facts.unknown_cluster(("to",), step.target)
        return unknown or self.validate_pair(step, facts)

    def validate_pair(self, step, facts: TimelineFacts) -> list[StepProblem]:
        """Checks that make sense once both clusters are known to exist."""
        return []
