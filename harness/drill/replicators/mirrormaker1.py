"""Apache MirrorMaker 1 (``kafka.tools.MirrorMaker``) as a replicator under test, for teams still on it.

MirrorMaker 1 is a consumer group on the source and one producer into the target: records keep
their topic's name (there is no remote-topic prefix), ``--num.streams`` consumers share the
group's partitions, and each flow's ``--include`` regex picks the topics. It shipped in Kafka's
core jar until 3.9 (KIP-720 removed it in 4.0), so it runs from Kafka 3.9's jars, talking to the
drill's brokers as any 3.9 client does.

What it does not do, and the drill file's check therefore refuses (``file_problems``): rename
topics (the drill needs ``policy: identity``), tell a copy from an original (no flow may close a
loop), create topics on the target (their copies are made here before it starts, with the
source's partition count; a ``create_topic`` or ``add_partitions`` step on a flow's source
would leave the copy behind), write checkpoints or translate a group's offsets (no
``translated`` or ``checkpoint`` failover), or copy back after a failover (no failback).

Its default message handler produces each record with no partition, so the target's partitioner
places it: keyed records land in the partition their key hashes to with Java's murmur2
(the source partition only when the source's producers hash the same way, e.g. librdkafka's
``partitioner: murmur2_random``), and records without a key spread; the checker counts those
as misplaced.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from confluent_kafka.admin import NewTopic

from mirrordrill.harness.drill.replicators.errors import UnsupportedOperation
from mirrordrill.harness.drill.replicators.interface import DEFAULT_STOP_GRACE_S, MadeOnCluster, Report, RunInputs
from mirrordrill.harness.drill.replicators.measurements import OffsetLagProbe
from mirrordrill.harness.drill.replicators.processes import NodeReplicator, ProcessNode
from mirrordrill.harness.drill.replicators.setup import FlowSpec, ReplicationSetup, replication_factor_for
from mirrordrill.primitives.bootstrap import Bootstrap
from mirrordrill.primitives.jvm_temp import temp_dir_flag
from mirrordrill.primitives.process import ManagedProcess
from mirrordrill.primitives.properties_syntax import format_property
from mirrordrill.primitives.redaction import redact_properties
from mirrordrill.primitives.versions import mirrormaker1_kafka_version

if TYPE_CHECKING:
    from mirrordrill.harness.drill.loops import IdentityLoop
    from mirrordrill.harness.drill.schema import FlowDef, ReplicationDef, Scenario
    from mirrordrill.replicator.policy import ReplicationPolicy

MAIN_CLASS = "kafka.tools.MirrorMaker"
JVM_PROFILE = "mirrormaker1"  # primitives/jvm/pom.xml
# Its consumers' coordinator logs at INFO there: readiness reads their assignments.
LOG4J_CONFIG = Path(__file__).resolve().parents[2] / "lab" / "resources" / "log4j2-mirrormaker1.properties"

# MirrorMaker 1 commits its group's positions every 60 s by default; a crash replays everything
# since the last commit. 5 s, as the drill intervals of MirrorMaker 2 bound its replay.
DRILL_COMMIT_INTERVAL_MS = 5000

# The consumer's and producer's own keys a flow's settings may carry (consumer.* / producer.*).
CLIENT_PREFIXES = ("consumer.", "producer.")

# ConsumerCoordinator's lines: a member joining (again) gives up what it held (eager rebalance),
# then is told its new assignment.
_REJOINING = re.compile(r"\[Consumer clientId=([^,\]]+), groupId=[^\]]*\] (?:\(Re-\)joining group|Request joining group)")
_ASSIGNED = re.compile(r"\[Consumer clientId=([^,\]]+), groupId=[^\]]*\] Notifying assignor about the new "
                       r"Assignment\(partitions=\[([^\]]*)\]\)")


@dataclass
class Mm1Node(ProcessNode):
    """One MirrorMaker 1 process: one flow, ``replica`` of ``replicas`` processes in the flow's group."""

    replica: int = 0
    replicas: int = 1
    producer_properties: str | None = None

    config_name = "consumer.properties"
    log_name = "mirrormaker1.log"

    @property
    def flow(self) -> FlowSpec:
        return self.flows[0]

    @property
    def name(self) -> str:
        replica = f" node {self.replica}" if self.replicas > 1 else ""
        return f"mirrormaker1 {self.flow.source}-to-{self.flow.target}{replica}"

    @property
    def producer_path(self) -> Path:
        return self.config_path.with_name(self.config_path.name.replace(self.config_name, "producer.properties"))


def group_name(source: str, target: str) -> str:
    """Flow ``source->target``'s consumer group on its source: under the source's alias, which a
    drill on existing clusters owns (it starts with the drill's ``owned_prefix``)."""
    return f"{source}.mirrormaker1.{target}"


def include_regex(flow: FlowSpec) -> str:
    """The flow's topics as MirrorMaker 1's one ``--include`` regex (it has no exclude list): the
    include list, less what the exclude list matches, both matched against the whole name."""
    if not flow.topics_exclude:
        return f"(?:{flow.topics_regex})"
    return f"(?!(?:{flow.topics_exclude_regex})$)(?:{flow.topics_regex})"


def client_settings(flow: FlowSpec, prefix: str) -> dict[str, str]:
    """The flow's ``consumer.*`` or ``producer.*`` settings, without the prefix."""
    return {k[len(prefix):]: v for k, v in flow.settings.items() if k.startswith(prefix)}


def properties_text(header: str, settings: Mapping[str, str]) -> str:
    return f"# {header}\n" + "".join(format_property(k, v) + "\n" for k, v in settings.items())


class MirrorMaker1Replicator(NodeReplicator[Mm1Node]):
    """Real Apache MirrorMaker 1 (Kafka 3.9's ``kafka.tools.MirrorMaker``), one group per flow."""

    kind = "mirrormaker1"
    label = "MirrorMaker 1"
    default_ready_timeout_s = 120.0
    reads_fields = frozenset({"mirrormaker1"})
    nodes_setting = "replication.mirrormaker1.nodes"
    sweepable = True  # sweep's num_streams is its --num.streams; linger.ms, batch.size, compression its producer's
    cannot_restore_history = ("MirrorMaker 1 cannot: it copies topics under their own names and cannot tell a copy "
                              "from an original, so nothing brings a wiped cluster's history back")

    @classmethod
    def options_for(cls, replication, run: RunInputs) -> dict:
        mm1 = replication.mirrormaker1
        jars = run.artifacts.mirrormaker1_classpath if run.artifacts is not None else ()
        return {"streams": mm1.streams, "nodes": mm1.nodes} | ({"classpath": jars} if jars else {})

    @classmethod
    def version(cls) -> str:
        return f"MirrorMaker 1 (Kafka {mirrormaker1_kafka_version()})"

    @classmethod
    def delivery_mode(cls, mode: str | None, exactly_once: bool) -> str:
        return "at-least-once"

    @classmethod
    def file_problems(cls, s: Scenario, base_dir: Path | None = None) -> Iterable[tuple[tuple, str]]:
        from mirrordrill.harness.drill.replicators.mirrormaker1_checks import drill_problems
        return drill_problems(s)

    @classmethod
    def file_warnings(cls, s: Scenario) -> Iterable[tuple[tuple, str]]:
        from mirrordrill.harness.drill.replicators.mirrormaker1_checks import ignored_settings
        return ignored_settings(s)

    @classmethod
    def made_for_flow(cls, flow: FlowDef, policy: ReplicationPolicy) -> list[MadeOnCluster]:
        # no checkpoints: it translates no offsets; its consumer group reads the source
        return [MadeOnCluster(flow.source, group_name(flow.source, flow.target), "group", "MirrorMaker 1's consumers")]

    @classmethod
    def planned_nodes(cls, replication: ReplicationDef) -> int:
        return len(replication.flows) * replication.mirrormaker1.nodes  # a group of ``nodes`` processes per flow

    @classmethod
    def identity_loop_problems(cls, s: Scenario, loop: IdentityLoop, error: Report, warn: Report) -> None:
        error(("replication", "flows", loop.index),
              f"MirrorMaker 1 would copy topic {loop.topic!r} round {loop.cycle} forever: it cannot tell a copy "
              "from an original; leave it out of this flow (topics_exclude)")

    def __init__(self, setup: ReplicationSetup, *, streams: int = 1, nodes: int = 1, heap_mb: int = 256,
                 commit_interval_ms: int = DRILL_COMMIT_INTERVAL_MS, java: str | None = None,
                 classpath: Sequence[Path] | None = None, ready_timeout_s: float | None = None) -> None:
        """``streams``: consumer threads per process (``--num.streams``); ``nodes``: processes per
        flow in the flow's consumer group. The jars come from ``classpath``, else the bootstrap cache."""
        super().__init__(setup, ready_timeout_s)
        self._probe = OffsetLagProbe(setup, keeps_partitions=False)  # its producer's partitioner places copies
        self.streams, self.replicas, self.heap_mb = streams, nodes, heap_mb
        self.commit_interval_ms = commit_interval_ms
        bootstrap = Bootstrap()
        self._java = java or bootstrap.java()
        self._classpath = tuple(Path(p) for p in (classpath or bootstrap.jvm_classpath(JVM_PROFILE)))
        root = setup.folder / "mirrormaker1"
        self.nodes = self.with_secret_dir([
            Mm1Node(flow.location, [flow], root / f"{flow.source}-to-{flow.target}"
                    / ("" if nodes == 1 else f"node-{i}"), replica=i, replicas=nodes)
            for flow in setup.flows for i in range(nodes)])
        for node in self.nodes:
            node.process = ManagedProcess(name=node.name, argv=self._argv(node), log_path=node.log_path,
                                          cwd=node.workdir, stop_timeout_s=DEFAULT_STOP_GRACE_S)

    # --- configuration ----------------------------------------------------------------
    def _argv(self, node: Mm1Node) -> list[str]:
        return [
            self._java, f"-Xms{min(128, self.heap_mb)}m", f"-Xmx{self.heap_mb}m", "-XX:+UseG1GC",
            "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={LOG4J_CONFIG}", f"-Dkafka.logs.dir={node.workdir}",
            temp_dir_flag(node.workdir), "-cp", ":".join(str(p) for p in self._classpath), MAIN_CLASS,
            "--consumer.config", str(node.config_path), "--producer.config", str(node.producer_path),
            "--include", include_regex(node.flow), "--num.streams", str(self.streams),
            "--offset.commit.interval.ms", str(self.commit_interval_ms),
        ]

    def _security(self, cluster: str) -> dict[str, str]:
        return dict(self.setup.env.cluster(cluster).client_security.jvm())

    def render(self, node: Mm1Node) -> str:
        """The consumer's properties (the source as seen from where the process runs)."""
        flow = node.flow
        settings = {"bootstrap.servers": self.setup.bootstrap(flow.source, flow.location),
                    "group.id": group_name(flow.source, flow.target), "client.id": re.sub(r"\W+", "-", node.name),
                    "auto.offset.reset": "earliest", **self._security(flow.source),
                    **client_settings(flow, "consumer.")}
        return properties_text(f"{node.name}: the consumer of flow {flow.name}", settings)

    def render_producer(self, node: Mm1Node) -> str:
        """The producer's properties (MirrorMaker 1 itself defaults to acks=all, one request in flight)."""
        flow = node.flow
        settings = {"bootstrap.servers": self.setup.bootstrap(flow.target, flow.location),
                    "client.id": re.sub(r"\W+", "-", node.name), **self._security(flow.target),
                    **client_settings(flow, "producer.")}
        return properties_text(f"{node.name}: the producer of flow {flow.name}", settings)

    def _prepare(self) -> None:
        super()._prepare()
        secrets = getattr(self.setup.env, "secrets", None)
        for node in self.nodes:
            node.producer_properties = self.render_producer(node)
            if secrets is None or node.secret_dir is None:
                node.producer_path.write_text(node.producer_properties)
            else:
                secrets.file(node.producer_path.name, node.producer_properties)
                (node.workdir / "producer.properties").write_text(redact_properties(node.producer_properties))
        for flow in self.setup.flows:
            self._create_copies(flow)

    def _create_copies(self, flow: FlowSpec) -> None:
        """Each source topic the flow selects, created on the target with its partition count
        where missing: MirrorMaker 1 only produces, and a drill's brokers create no topic on a write."""
        target = self.setup.env.cluster(flow.target)
        there = target.admin().list_topics(timeout=15).topics
        rf = replication_factor_for(self.brokers_of(flow.target))
        missing = [NewTopic(name, num_partitions=partitions, replication_factor=rf)
                   for name, partitions in self._probe.selected_topics(flow).items() if name not in there]
        if missing:
            target.create_topics(missing)

    # --- readiness --------------------------------------------------------------------
    def _node_not_ready(self, node: Mm1Node, started_at: float, log: str) -> list[str]:
        """Ready once the flow's group has settled: each of the node's consumers was given its
        partitions after its last revocation, and the flow's nodes together hold every partition."""
        held = assignments(log)
        if len(held) < self.streams or any(parts is None for parts in held.values()):
            settled = sum(parts is not None for parts in held.values())
            return [f"{node.name}: {settled}/{self.streams} consumers have their partitions"]
        if node.replica != node.replicas - 1:
            return []
        wanted = {f"{t}-{p}" for t, n in self._probe.selected_topics(node.flow).items() for p in range(n)}
        missing = wanted - self._held_by_flow(node.flow)
        return [f"{node.flow.name}: {len(missing)} partition(s) not yet assigned"] if missing else []

    def node_copying(self, topic: str, partition: int) -> int:
        """The node one of whose consumers holds ``partition`` of ``topic`` now (from its log)."""
        for i, node in enumerate(self.nodes):
            held = assignments(node.process.log_tail(400)) if node.process is not None and node.process.running else {}
            if any(f"{topic}-{partition}" in (parts or ()) for parts in held.values()):
                return i
        return super().node_copying(topic, partition)

    def _held_by_flow(self, flow: FlowSpec) -> set[str]:
        held: set[str] = set()
        for node in self.nodes:
            if node.flow == flow and node.process is not None and node.process.running:
                held |= {p for parts in assignments(node.process.log_tail(400)).values() for p in parts or ()}
        return held

    # --- what it cannot do ------------------------------------------------------------
    def translate_offsets(self, group: str, source: str, target: str, *,
                          source_lost: bool = False) -> dict[tuple[str, int], int]:
        raise UnsupportedOperation("MirrorMaker 1 writes no checkpoints and translates no offsets; choose the "
                                   "timestamp, earliest or latest failover strategy")

    # --- description ------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        nodes = []
        for node in self.nodes:
            summary = self.node_summary(node)
            summary["producer_properties"] = redact_properties(node.producer_properties or "# not rendered yet")
            flow = node.flow
            nodes.append({**summary, "group": group_name(flow.source, flow.target), "include": include_regex(flow)})
        return {"kind": self.kind, "policy": self.setup.policy, "streams": self.streams,
                "nodes_per_flow": self.replicas, "commit_interval_ms": self.commit_interval_ms,
                "processes": nodes, "metrics_method": "end offsets on both clusters, summed per topic"}


def assignments(log: str) -> dict[str, list[str] | None]:
    """Each consumer's partitions from its log lines, newest event last: None while it is between a
    revocation (or a join) and its next assignment."""
    events = sorted([(m.start(), m.group(1), None) for m in _REJOINING.finditer(log)]
                    + [(m.start(), m.group(1), m.group(2)) for m in _ASSIGNED.finditer(log)],
                    key=lambda e: e[0])
    held: dict[str, list[str] | None] = {}
    for _, client, parts in events:
        held[client] = None if parts is None else [p.strip() for p in parts.split(",") if p.strip()]
    return held
