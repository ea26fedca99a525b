"""What the steps on one cluster share: how they are named, and that the cluster exists."""

from __future__ import annotations

from harness.drill.actions.base import Action, StepProblem, TimelineFacts
from harness.drill.schema import CreateTopic


class ClusterAction(Action):
    """A step on one cluster of the drill."""

    def describe(self, step) -> str:
        return f"{step.do} {step.cluster}"

    def validate(self, step, facts: TimelineFacts) -> list[StepProblem]:
        return facts.unknown_cluster(("cluster",), step.cluster) or self.validate_on_cluster(step, facts)

    def validate_on_cluster(self, step, facts: TimelineFacts) -> list[StepProblem]:
        """Checks that make sense once the cluster is known to exist."""
        return []


class TopicAction(ClusterAction):
    """A change to an existing topic: declared in the drill file or created by an earlier step."""

    def describe(self, step) -> str:
        return f"{step.do} {step.cluster} {step.topic}"

    def validate_on_cluster(self, step, facts: TimelineFacts) -> list[StepProblem]:
        if step.topic in facts.topics[step.cluster]:
            return []
        if any(isinstance(p, CreateTopic) and p.topic == step.topic and p.cluster == step.cluster for p in facts.earlier):
            return []
        return [StepProblem(("topic",), f"topic {step.topic!r} is not declared on {step.cluster}")]
