"""MirrorMaker 2's processes: the nodes of each Connect group, and which node holds which task.

Several dedicated-mode processes with the same configuration and ``--clusters <target>`` form one
Connect group per flow into that target (group ``<source>-mm2``), and Connect spreads the flow's
tasks over them. Which task runs where is read from Connect's own topics (``mm2_assignment``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.drill.replicators import mm2_assignment
from harness.drill.replicators.errors import ReplicatorError
from harness.drill.replicators.processes import ProcessNode, read_log_since
from harness.drill.replicators.setup import FlowSpec, ReplicationSetup

# AbstractCoordinator's line once a herder's worker is in its group (one per flow of the process)
JOINED_GROUP = re.compile(r"Successfully joined group with generation")


@dataclass
class Mm2Node(ProcessNode):
    """One MM2 process: the flows into ``target`` whose replicator runs in ``location``; ``replica``
    of ``replicas`` processes with the same configuration that form one Connect group."""

    replica: int = 0
    replicas: int = 1
    rest_port: int | None = None  # its internal REST listener on 127.0.0.1, when that is on

    config_name = "mm2.properties"
    log_name = "mm2.log"

    @property
    def target(self) -> str:
        return self.flows[0].target  # every flow of a node replicates into the same cluster

    @property
    def name(self) -> str:
        where = "" if self.location == self.target else f" (at {self.location})"
        replica = f" node {self.replica}" if self.replicas > 1 else ""
        return f"mirrormaker2 {self.target}{where}{replica}"


def plan_nodes(setup: ReplicationSetup, root: Path, replicas: int = 1) -> list[Mm2Node]:
    """Group flows into MM2 processes: ``replicas`` per (target, location), each in its own folder."""
    groups: dict[tuple[str, str], list[FlowSpec]] = {}
    for flow in setup.flows:
        groups.setdefault((flow.target, flow.location), []).append(flow)
    nodes = []
    for (target, location), flows in groups.items():
        folder = root / (target if location == target else f"{target}-at-{location}")
        nodes += [Mm2Node(location, flows, folder if replicas == 1 else folder / f"node-{i}", replica=i, replicas=replicas)
                  for i in range(replicas)]
    return nodes


def joined_problems(node: Mm2Node, log: str) -> list[str]:
    """Why ``node`` is not in its groups yet, from what it logged: [] once each herder joined."""
    joined = len(JOINED_GROUP.findall(log))
    return [] if joined >= len(node.flows) else [f"{node.name}: {joined}/{len(node.flows)} herders joined their group"]


def group_log(nodes: list[Mm2Node], node: Mm2Node, offsets: Mapping[str, int]) -> str:
    """What every node of ``node``'s group logged since ``offsets``: any one of them runs the connector."""
    return "".join(read_log_since(n.log_path, offsets.get(n.name, 0)) for n in nodes
                   if n.target == node.target and n.location == node.location)


def node_of_worker(nodes: list[Mm2Node], flow: str, worker_id: str) -> int | None:
    """The index of the node a Connect worker id names: by its REST port (the only node of a lone group)."""
    source, _, target = flow.partition("->")
    group = [i for i, n in enumerate(nodes) if any(f.source == source and f.target == target for f in n.flows)]
    if len(group) == 1:
        return group[0]
    port = mm2_assignment.worker_port(worker_id)
    return next((i for i in group if nodes[i].rest_port == port), None) if port else None


def _pairs(nodes: list[Mm2Node]) -> list[tuple[str, str]]:
    return list(dict.fromkeys((f.source, f.target) for n in nodes for f in n.flows))


def task_assignment(setup: ReplicationSetup, nodes: list[Mm2Node]) -> dict[str, int | str]:
    """``"<A->B> <task>" -> node index`` for every task running now (any other state by its name)."""
    return mm2_assignment.assignment(setup, _pairs(nodes), lambda flow, worker: node_of_worker(nodes, flow, worker))


def node_copying(setup: ReplicationSetup, nodes: list[Mm2Node], topic: str, partition: int) -> int:
    """The index of the node running the MirrorSourceTask whose configuration assigns it the partition."""
    found = mm2_assignment.copying_task(setup, _pairs(nodes), topic, partition)
    if found is None:
        raise ReplicatorError(f"no MirrorSourceTask is assigned {topic}-{partition} (mm2-configs topics)")
    source, target, task = found
    state, worker = mm2_assignment.task_workers(setup, source, target).get(task, ("UNASSIGNED", ""))
    node = node_of_worker(nodes, f"{source}->{target}", worker)
    if state != "RUNNING" or node is None:
        raise ReplicatorError(f"{source}->{target} {task} copies {topic}-{partition} but runs on no node now "
                              f"({state}, worker {worker or 'none'})")
    return node
