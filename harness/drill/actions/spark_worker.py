"""kill_spark_worker: a Spark worker's machine dies mid-drill (the worker and its executors, SIGKILL)."""

from __future__ import annotations

from mirrordrill.harness.drill.actions.base import Action, StepFacts, StepProblem, TimelineFacts
from mirrordrill.harness.drill.context import DrillContext
from mirrordrill.harness.drill.replicators import replicator_class
from mirrordrill.harness.drill.schema_timeline import SparkWorkerStep
from mirrordrill.harness.lab.spark.deployment import STANDALONE
from mirrordrill.harness.lab.spark.standalone import StandaloneSpec

NEEDS = "kill_spark_worker needs the Spark standalone cluster: set replication.spark.master: standalone"


class SparkWorkerAction(Action):
    step_type = SparkWorkerStep
    # its executors die mid-write and Spark runs their tasks again elsewhere
    facts = {"kill_spark_worker": StepFacts(duplicates=True)}

    def describe(self, step: SparkWorkerStep) -> str:
        return f"kill_spark_worker {step.worker}"

    def validate(self, step: SparkWorkerStep, facts: TimelineFacts) -> list[StepProblem]:
        r = facts.scenario.replication
        problems = []
        if not replicator_class(r.replicator).uses_spark or r.spark.master != STANDALONE:
            problems.append(StepProblem((), f"{NEEDS} (with replicator: pyspark)"))
        workers = StandaloneSpec().workers
        if step.worker >= workers:
            problems.append(StepProblem(("worker",), f"worker {step.worker} does not exist; the standalone "
                                                     f"cluster has workers 0..{workers - 1}"))
        return problems

    def apply(self, ctx: DrillContext, step: SparkWorkerStep) -> str:
        cluster = ctx.env.spark
        if cluster is None:  # e.g. run --replicator mirrormaker2 on a file written for pyspark
            raise RuntimeError(f"{NEEDS}; this run has no Spark cluster")
        worker = cluster.kill_worker(step.worker)
        alive = sum(1 for w in cluster.workers if w.running)
        return f"killed {worker.name} and its executors (SIGKILL); {alive} worker(s) left"

    def undo(self, ctx: DrillContext, step: SparkWorkerStep) -> str:
        """The machine comes back: the worker starts again and registers with the master."""
        cluster = ctx.env.spark
        if cluster is None:
            raise RuntimeError(f"{NEEDS}; this run has no Spark cluster")
        worker = cluster.workers[step.worker]
        if not worker.running:
            worker.start()
        return f"restarted {worker.name}"
