"""MirrorMaker 2's processes: the nodes of each Connect group, and which node holds which task.

Several dedicated-mode processes with the same configuration and ``--clusters <target>`` form one
Connect group per flow into that target (group ``<source>-mm2``), and Connect spreads the flow's
tasks over them. Which task runs where is read from Connect's own topics (``mm2_assignment``).
"""

from __future__ import annotations

import re
from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mirrordrill.harness.drill.replicators import mm2_assignment
from mirrordrill.harness.drill.replicators.errors import ReplicatorError
from mirrordrill.harness.drill.replicators.processes import NodeReplicator, ProcessNode, flow_placements, read_log_since
from mirrordrill.harness.drill.replicators.setup import FlowSpec, ReplicationSetup
from mirrordrill.primitives.ports import LOOPBACK

if TYPE_CHECKING:
    from mirrordrill.harness.drill.schema import ReplicationDef

INTERNAL_REST_SETTINGS: Mapping[str, str] = {
    # Zombie fencing (exactly-once) and task configs sent from a follower to the leader (several
    # nodes) go over Connect's internal REST API, which dedicated mode only brings up on request
    # (KIP-710). ``listeners`` is set per node to a reserved loopback port (``rest_settings``): the
    # default (http://:8083) listens on every interface. No ``admin.listeners`` or
    # ``rest.advertised.*``: MM2's REST server serves the internal endpoints alone, on the
    # listener, and advertises the listener's own host. (Each herder's logged worker config still
    # shows Connect's default ``listeners``: dedicated mode starts no REST server per herder.)
    "dedicated.mode.enable.internal.rest": "true",
}
"""Top-level keys of MM2's internal REST (as Kafka's ops docs give it for exactly-once in dedicated mode)."""


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


def read_task_assignment(setup: ReplicationSetup, nodes: list[Mm2Node]) -> dict[str, int | str]:
    """``"<A->B> <task>" -> node index`` for every task running now (any other state by its name)."""
    return mm2_assignment.assignment(setup, _pairs(nodes), lambda flow, worker: node_of_worker(nodes, flow, worker))


def find_node_copying(setup: ReplicationSetup, nodes: list[Mm2Node], topic: str, partition: int) -> int:
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


class Mm2Group(NodeReplicator[Mm2Node]):
    """What a MirrorMaker 2 replicator of groups of nodes adds to one of lone processes: each node's
    loopback REST listener, readiness as a group, and which node holds which task."""

    exactly_once: bool
    replicas: int  # nodes per (target, location)
    _start_offsets: dict[str, int]  # each log's size at the last start: a group's checks read them all

    @classmethod
    def planned_nodes(cls, replication: ReplicationDef) -> int:
        return len(flow_placements(replication)) * replication.mirrormaker2.nodes  # a group per (target, location)

    @abstractmethod
    def _flows_not_ready(self, node: Mm2Node, started_at: float, log: str) -> list[str]:
        """Why the flows of ``node``'s group do not copy yet, from what the group logged since ``started_at``."""

    @property
    def internal_rest(self) -> bool:
        """Exactly-once fencing and several nodes in one group both need workers to reach each other."""
        return self.exactly_once or self.replicas > 1

    def rest_settings(self, node: Mm2Node) -> dict[str, str]:
        """Internal REST on loopback: the worker advertises (and is named after) the URL it binds."""
        if not self.internal_rest:
            return {}
        return {**INTERNAL_REST_SETTINGS, "listeners": f"http://{LOOPBACK}:{node.rest_port or 0}"}

    def _prepare(self) -> None:
        # A reserved port per node, kept over restarts: the node's worker id (hence the task
        # assignment in the status topic) names it, and a port chosen by bind(0) is known only to the JVM.
        take_port = getattr(self.setup.env, "take_port", None)
        for node in self.nodes:
            if self.internal_rest and node.rest_port is None and take_port is not None:
                node.rest_port = take_port()
        super()._prepare()

    def _wait_ready(self, started_at: float, log_offsets: dict[str, int], deadline: float) -> None:
        self._start_offsets = dict(log_offsets)
        super()._wait_ready(started_at, log_offsets, deadline)

    def _node_back(self, node: Mm2Node, started_at: float, log: str) -> list[str]:
        """A restarted node of a group is back once its herders joined their groups again (the
        connector may stay on another node); a lone node as at its first start."""
        return joined_problems(node, log) if node.replicas > 1 else self._node_not_ready(node, started_at, log)

    def _node_not_ready(self, node: Mm2Node, started_at: float, log: str) -> list[str]:
        """Several nodes: each has joined its groups, and the first also checks the group as one node.
        One node: ready when, for every flow, MM2 emits heartbeats into the target, its source connector has
        started, and (if the source has topics to copy) a source task is replicating them."""
        if node.replicas > 1:
            joined = joined_problems(node, log)
            if node.replica > 0:
                return joined
            return joined + self._flows_not_ready(node, started_at, group_log(self.nodes, node, self._start_offsets))
        return self._flows_not_ready(node, started_at, log)

    # --- which node holds which task ------------------------------------------------------
    def task_assignment(self) -> dict[str, int | str] | None:
        return read_task_assignment(self.setup, self.nodes)

    def node_copying(self, topic: str, partition: int) -> int:
        return find_node_copying(self.setup, self.nodes, topic, partition)
