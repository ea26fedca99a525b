"""add_partitions: grow a topic while records flow (does the replicator follow the new partitions?)."""

from __future__ import annotations

from confluent_kafka.admin import NewPartitions

from mirrordrill.harness.drill.actions.base import NotUndoable, StepProblem, TimelineFacts
from mirrordrill.harness.drill.actions.cluster_action import TopicAction
from mirrordrill.harness.drill.context import DrillContext
from mirrordrill.harness.drill.schema_timeline import AddPartitions, CreateTopic


class AddPartitionsAction(TopicAction):
    step_type = AddPartitions

    def validate_on_cluster(self, step: AddPartitions, facts: TimelineFacts) -> list[StepProblem]:
        problems = super().validate_on_cluster(step, facts)
        now = _partitions_before(step, facts)
        if not problems and now is not None and step.partitions <= now:
            problems.append(StepProblem(("partitions",), f"{step.topic} already has {now} partitions by then; "
                                        "'partitions' is the new total and Kafka can only add partitions, "
                                        f"so write more than {now}"))
        return problems

    def apply(self, ctx: DrillContext, step: AddPartitions) -> str:
        admin = ctx.env.cluster(step.cluster).admin()
        admin.create_partitions([NewPartitions(step.topic, step.partitions)])[step.topic].result(timeout=30)
        return f"now {step.partitions} partitions"

    def undo(self, ctx: DrillContext, step: AddPartitions) -> str:
        raise NotUndoable("add_partitions has no inverse: Kafka cannot take partitions away from a topic")


def _partitions_before(step: AddPartitions, facts: TimelineFacts) -> int | None:
    """How many partitions ``step.topic`` has on ``step.cluster`` when the step runs, as far as the file says."""
    count = next((t.partitions for t in facts.scenario.topics if t.name == step.topic and t.cluster == step.cluster),
                 None)
    for earlier in facts.earlier:
        if isinstance(earlier, (CreateTopic, AddPartitions)) and (earlier.topic, earlier.cluster) == (step.topic, step.cluster):
            count = earlier.partitions
    return count
