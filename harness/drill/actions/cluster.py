"""stop_cluster, kill_cluster, pause_cluster, resume_cluster, restart_cluster, start_cluster: a whole data center."""

from __future__ import annotations

from mirrordrill.harness.drill.actions.base import StepFacts
from mirrordrill.harness.drill.actions.cluster_action import ClusterAction
from mirrordrill.harness.drill.actions.lifecycle_action import LifecycleAction
from mirrordrill.harness.drill.context import DrillContext
from mirrordrill.harness.drill.schema_timeline import ClusterStep

# A cluster (re)started by a step is waited for this long: the steps after it expect it serving.
CLUSTER_READY_TIMEOUT_S = 180


class ClusterStepAction(ClusterAction, LifecycleAction):
    step_type = ClusterStep
    noun = "cluster"
    refused_on_existing = True
    # a data center that dies or stops keeps what it acknowledged and had not yet replicated
    facts = {
        "kill_cluster": StepFacts(loses=True, duplicates=True),
        "stop_cluster": StepFacts(loses=True, duplicates=True),
        "restart_cluster": StepFacts(duplicates=True),
    }

    def run(self, ctx: DrillContext, step: ClusterStep, verb: str) -> None:
        cluster = ctx.env.cluster(step.cluster)
        if verb == "start":
            cluster.start()
            cluster.wait_ready(CLUSTER_READY_TIMEOUT_S)
        elif verb == "restart":
            cluster.restart(CLUSTER_READY_TIMEOUT_S)
        else:
            getattr(cluster, verb)()
