"""create_topic: a new topic on one cluster while the drill runs (does the replicator pick it up?)."""

from __future__ import annotations

from confluent_kafka.admin import NewTopic

from mirrordrill.harness.drill.actions.base import NotUndoable, StepProblem, TimelineFacts
from mirrordrill.harness.drill.actions.cluster_action import TopicAction
from mirrordrill.harness.drill.context import DrillContext
from mirrordrill.harness.drill.schema_timeline import CreateTopic


class CreateTopicAction(TopicAction):
    step_type = CreateTopic

    def validate_on_cluster(self, step: CreateTopic, facts: TimelineFacts) -> list[StepProblem]:
        return []  # the topic is new: it need not be declared

    def apply(self, ctx: DrillContext, step: CreateTopic) -> str:
        ctx.env.cluster(step.cluster).create_topics([NewTopic(step.topic, step.partitions, 1,
                                                              config={k: str(v) for k, v in step.config.items()})])
        return "created"

    def undo(self, ctx: DrillContext, step: CreateTopic) -> str:
        raise NotUndoable("create_topic has no inverse here: deleting a topic that may have been replicated "
                          "is a fault of its own, with its own questions for the replicator")
