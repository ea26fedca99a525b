"""set_topic_config: change a topic's settings (retention, compaction, ...) while the drill runs."""

from __future__ import annotations

from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from mirrordrill.harness.drill.actions.cluster_action import TopicAction
from mirrordrill.harness.drill.context import DrillContext
from mirrordrill.harness.drill.schema_timeline import CreateTopic, SetTopicConfig


class SetTopicConfigAction(TopicAction):
    step_type = SetTopicConfig

    def apply(self, ctx: DrillContext, step: SetTopicConfig) -> str:
        _alter(ctx, step, [ConfigEntry(k, str(v), incremental_operation=AlterConfigOpType.SET)
                           for k, v in step.config.items()])
        return "configs set"

    def undo(self, ctx: DrillContext, step: SetTopicConfig) -> str:
        """Each setting back to what the drill file created the topic with, else to the broker's default."""
        created = _created_config(ctx, step)
        _alter(ctx, step, [ConfigEntry(k, created[k], incremental_operation=AlterConfigOpType.SET) if k in created
                           else ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE)
                           for k in step.config])
        return "configs restored"


def _alter(ctx: DrillContext, step: SetTopicConfig, entries: list[ConfigEntry]) -> None:
    admin = ctx.env.cluster(step.cluster).admin()
    res = ConfigResource(ResourceType.TOPIC, step.topic, incremental_configs=entries)
    admin.incremental_alter_configs([res])[res].result(timeout=30)


def _created_config(ctx: DrillContext, step: SetTopicConfig) -> dict[str, str]:
    """The topic's settings as declared under ``topics`` or given by the create_topic step that made it."""
    s = ctx.scenario
    made = [t.config for t in s.topics if (t.cluster, t.name) == (step.cluster, step.topic)]
    made += [c.config for c in s.timeline
             if isinstance(c, CreateTopic) and (c.cluster, c.topic) == (step.cluster, step.topic)]
    return {k: str(v) for config in made for k, v in config.items()}
