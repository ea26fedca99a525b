"""kill_replicator_node, bounce_replicator_node, pause_replicator_node: one process of the replicator.

The ``*_replicator`` steps act on every process at once; these act on one node of several (one
MirrorMaker 2 process of a group, one process of ours), named by index or as the node whose task
copies a given source partition when the step runs.
"""

from __future__ import annotations

from mirrordrill.harness.drill.actions.base import Action, NotUndoable, StepFacts, StepProblem, TimelineFacts
from mirrordrill.harness.drill.context import DrillContext, now_ms
from mirrordrill.harness.drill.replicators import replicator_class, replicator_kinds
from mirrordrill.harness.drill.replicators.processes import NodeReplicator
from mirrordrill.harness.drill.schema_timeline import ReplicatorNodeStep


class ReplicatorNodeAction(Action):
    step_type = ReplicatorNodeStep
    # A node that dies, stops or freezes mid-write leaves records copied but not yet committed as
    # done; whoever takes its tasks over (another node, or itself after the restart) copies them
    # again. A paused MM2 node resumed after its tasks moved may also still send what it held.
    facts = {
        "kill_replicator_node": StepFacts(duplicates=True),
        "bounce_replicator_node": StepFacts(duplicates=True),
        "pause_replicator_node": StepFacts(duplicates=True),
    }

    def describe(self, step: ReplicatorNodeStep) -> str:
        if step.copying is not None:
            return f"{step.do} copying {step.copying.topic}-{step.copying.partition}"
        return f"{step.do} {step.node}"

    def validate(self, step: ReplicatorNodeStep, facts: TimelineFacts) -> list[StepProblem]:
        kind = facts.scenario.replication.replicator
        adapter = replicator_class(kind)
        if not issubclass(adapter, NodeReplicator):
            made_of_nodes = ", ".join(k for k in replicator_kinds() if issubclass(replicator_class(k), NodeReplicator))
            return [StepProblem((), f"{step.do} needs a replicator made of nodes ({made_of_nodes}); "
                                    f"{kind} has none to pick from")]
        count = adapter.planned_nodes(facts.scenario.replication)
        if step.node is not None and step.node >= count:
            how = f" (raise {adapter.nodes_setting} for more)" if adapter.nodes_setting else ""
            return [StepProblem(("node",), f"node {step.node} does not exist; the replicator runs nodes "
                                           f"0..{count - 1}{how}")]
        if step.copying is not None:
            sources = {f.source for f in facts.scenario.replication.flows}
            if not any(step.copying.topic in facts.topics.get(c, frozenset()) for c in sources):
                return [StepProblem(("copying", "topic"), f"topic {step.copying.topic!r} is not declared on a flow's "
                                                          f"source ({', '.join(sorted(sources))})")]
        return []

    def apply(self, ctx: DrillContext, step: ReplicatorNodeStep) -> str:
        replicator = ctx.replicator
        if not isinstance(replicator, NodeReplicator):
            raise RuntimeError(f"{step.do}: {type(replicator).__name__} has no nodes to pick from")
        index = (step.node if step.node is not None
                 else replicator.node_copying(step.copying.topic, step.copying.partition) if step.copying else 0)
        replicator.note_node_fault(step.do, index, now_ms())
        if step.do == "kill_replicator_node":
            return replicator.kill_node(index)
        if step.do == "bounce_replicator_node":
            return replicator.bounce_node(index)
        paused = replicator.pause_node(index)
        try:
            # a stop of the drill ends the pause early; Ctrl-C raises here: either way it resumes
            ctx.stop_requested.wait(step.duration)
        finally:
            resumed = replicator.resume_node(index)
        return f"{paused}; {resumed}"

    def undo(self, ctx: DrillContext, step: ReplicatorNodeStep) -> str:
        if step.do != "kill_replicator_node":
            raise NotUndoable(f"{step.do} has no inverse: it ends where it began, running")
        replicator = ctx.replicator
        if not isinstance(replicator, NodeReplicator) or step.node is None:
            raise NotUndoable(f"{step.do} by what it copies names no node to start again")
        return replicator.bounce_node(step.node)
