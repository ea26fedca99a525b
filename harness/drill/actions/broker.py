"""stop_broker, kill_broker, pause_broker, resume_broker, restart_broker: one broker of one cluster.

The broker is named by number, or as the leader of a partition (``leader_of``), found when the
step runs: "kill the leader" is the fault a replicated cluster exists to survive.
"""

from __future__ import annotations

from mirrordrill.harness.drill.actions.base import NotUndoable, StepFacts, StepProblem, TimelineFacts
from mirrordrill.harness.drill.actions.cluster_action import ClusterAction
from mirrordrill.harness.drill.actions.lifecycle_action import LifecycleAction
from mirrordrill.harness.drill.context import DrillContext
from mirrordrill.harness.drill.schema_timeline import BrokerStep, CreateTopic
from mirrordrill.primitives.kafka.topics import partition_leader


class BrokerAction(ClusterAction, LifecycleAction):
    step_type = BrokerStep
    noun = "broker"
    refused_on_existing = True
    # a broker that dies mid-write leaves requests unanswered that the replicator sends again
    facts = {do: StepFacts(duplicates=True) for do in ("kill_broker", "stop_broker", "restart_broker")}

    def describe(self, step: BrokerStep) -> str:
        if step.leader_of is not None:
            return f"{step.do} {step.cluster}/leader of {step.leader_of.topic}/{step.leader_of.partition}"
        return f"{step.do} {step.cluster}/{step.broker}"

    def validate_on_cluster(self, step: BrokerStep, facts: TimelineFacts) -> list[StepProblem]:
        if step.leader_of is not None:
            topic = step.leader_of.topic
            created = any(isinstance(p, CreateTopic) and p.topic == topic and p.cluster == step.cluster
                          for p in facts.earlier)
            if topic not in facts.topics[step.cluster] and not created:
                return [StepProblem(("leader_of", "topic"), f"topic {topic!r} is not declared on {step.cluster}")]
            return []
        brokers = facts.scenario.clusters[step.cluster].brokers
        if step.broker > brokers:
            return [StepProblem(("broker",), f"cluster {step.cluster} has brokers 1..{brokers}")]
        return []

    def apply(self, ctx: DrillContext, step: BrokerStep) -> str:
        node = self._node(ctx, step)
        verb = self.verb(step)
        getattr(ctx.env.cluster(step.cluster).broker(node), verb)()
        if step.leader_of is not None:
            return f"broker {verb}: broker {node}, leader of {step.leader_of.topic}/{step.leader_of.partition}"
        return f"broker {verb}"

    def run(self, ctx: DrillContext, step: BrokerStep, verb: str) -> None:
        if step.leader_of is not None and verb != self.verb(step):
            raise NotUndoable("the partition has another leader once its broker is down: name the broker "
                              "to bring back by number")
        getattr(ctx.env.cluster(step.cluster).broker(self._node(ctx, step)), verb)()

    @staticmethod
    def _node(ctx: DrillContext, step: BrokerStep) -> int:
        if step.leader_of is None:
            return step.broker
        cluster = ctx.env.cluster(step.cluster)
        return partition_leader(cluster.bootstrap, step.leader_of.topic, step.leader_of.partition,
                                security=cluster.security_config())
