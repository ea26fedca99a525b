"""stop_broker, kill_broker, pause_broker, resume_broker, restart_broker: one broker of one cluster."""

from __future__ import annotations

from harness.scenario.actions.base import StepProblem, TimelineFacts
from harness.scenario.actions.cluster_action import ClusterAction
from harness.scenario.actions.lifecycle_action import LifecycleAction
from harness.scenario.context import DrillContext
from harness.scenario.model import BrokerStep


class BrokerAction(ClusterAction, LifecycleAction):
    step_type = BrokerStep
    noun = "broker"

    def describe(self, step: BrokerStep) -> str:
        return f"{step.do} {step.cluster}/{step.broker}"

    def validate_on_cluster(self, step: BrokerStep, facts: TimelineFacts) -> list[StepProblem]:
        brokers = facts.scenario.clusters[step.cluster].brokers
        if step.broker > brokers:
            return [StepProblem(("broker",), f"cluster {step.cluster} has brokers 1..{brokers}")]
        return []

    def run(self, ctx: DrillContext, step: BrokerStep, verb: str) -> None:
        getattr(ctx.env.cluster(step.cluster).broker(step.broker), verb)()
