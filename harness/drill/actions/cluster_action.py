"""What the steps on one cluster share: how they are named, and that the cluster exists."""

from __future__ import annotations

from collections.abc import Collection
from typing import ClassVar

from mirrordrill.harness.drill.actions.base import Action, StepProblem, TimelineFacts
from mirrordrill.harness.drill.schema_timeline import CreateTopic


class ClusterAction(Action):
    """A step on one cluster of the drill."""

    # True: it acts on the cluster's brokers, which the harness does not own on a team's existing cluster
    refused_on_existing: ClassVar[bool] = False

    def describe(self, step) -> str:
        return f"{step.do} {step.cluster}"

    def lost_cluster(self, step) -> str | None:
        return step.cluster if self.facts_of(step.do).loses else None

    def existing_cluster_problems(self, step, existing: Collection[str], owned_prefix: str) -> list[StepProblem]:
        if not self.refused_on_existing or step.cluster not in existing:
            return []
        return [StepProblem(("do",), f"{step.do} on {step.cluster} is refused: it is an existing cluster, whose "
                                     "brokers the harness does not own; cut the harness's own paths instead "
                                     "(blackhole, partition, reset_connections on its links) or kill the replicator")]

    def validate(self, step, facts: TimelineFacts) -> list[StepProblem]:
        return facts.unknown_cluster(("cluster",), step.cluster) or self.validate_on_cluster(step, facts)

    def validate_on_cluster(self, step, facts: TimelineFacts) -> list[StepProblem]:
        """Checks that make sense once the cluster is known to exist."""
        return []


class TopicAction(ClusterAction):
    """A change to an existing topic: declared in the drill file or created by an earlier step."""

    def describe(self, step) -> str:
        return f"{step.do} {step.cluster} {step.topic}"

    def existing_cluster_problems(self, step, existing: Collection[str], owned_prefix: str) -> list[StepProblem]:
        if step.cluster not in existing or step.topic.startswith(owned_prefix):
            return []
        return [StepProblem(("topic",), f"{step.do} on topic {step.topic!r} of the existing cluster {step.cluster}: "
                                        f"the drill changes only its own topics, named {owned_prefix}…")]

    def validate_on_cluster(self, step, facts: TimelineFacts) -> list[StepProblem]:
        if step.topic in facts.topics[step.cluster]:
            return []
        if any(isinstance(p, CreateTopic) and p.topic == step.topic and p.cluster == step.cluster for p in facts.earlier):
            return []
        return [StepProblem(("topic",), f"topic {step.topic!r} is not declared on {step.cluster}")]
