"""add_partitions: grow a topic while records flow (does the replicator follow the new partitions?)."""

from __future__ import annotations

from confluent_kafka.admin import NewPartitions

from harness.scenario.actions.base import NotUndoable
from harness.scenario.actions.cluster_action import TopicAction
from harness.scenario.context import DrillContext
from harness.scenario.model import AddPartitions


class AddPartitionsAction(TopicAction):
    step_type = AddPartitions

    def apply(self, ctx: DrillContext, step: AddPartitions) -> str:
        admin = ctx.env.cluster(step.cluster).admin()
        admin.create_partitions([NewPartitions(step.topic, step.partitions)])[step.topic].result(timeout=30)
        return f"now {step.partitions} partitions"

    def undo(self, ctx: DrillContext, step: AddPartitions) -> str:
        raise NotUndoable("add_partitions has no inverse: Kafka cannot take partitions away from a topic")
