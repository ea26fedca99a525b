"""Apache MirrorMaker 2 (dedicated mode) as a replicator under test, from the same flows as ours.

One MM2 process per target data center and placement: ``MirrorMaker mm2.properties
--clusters <target>``. Placed at the target (the default) it consumes through the WAN and
produces locally; placed at the source it does the opposite. Each process's file names only
the clusters of its own flows, so MM2 starts no herders for pairs it does not serve.

The file is rendered by ``replicator.config.render.to_mm2_properties`` from the flows (the same
model our replicator runs from), plus what a drill on a small cluster needs:

* replication factors of remote and internal topics sized to the cluster (min(3, brokers));
  MM2's defaults (2 and 3) cannot be met by a one-broker data center;
* drill intervals (``drill_intervals=True``): topic/group refresh, topic-config sync,
  checkpoint and group-offset-sync every 5 s instead of 600/60 s, and Connect's
  ``offset.flush.interval.ms`` at 5 s instead of 60 s (it also paces MM2's delayed offset
  syncs, hence checkpoint freshness, and bounds the replay after a crash). They change when
  things happen, not what MM2 guarantees; a flow's own settings override them;
* ``plugin.discovery = service_load``: MM2's own start-up advice; cuts ~20 s of classpath
  scanning and changes nothing else.

Readiness: for every flow ``A->B``, a heartbeat keyed (A, B) written since the start into
B's ``heartbeats`` topic (the flow's herder runs and can produce into B), MM2 logging that
its source connector started, and — when A has topics to copy — a source task
"replicating … A->B". ``A.heartbeats`` on B is no readiness signal: it exists only when
something emits heartbeats *into* A (active/active, or an MM2 serving A as a target), which
a ``--clusters B`` process never does for a one-way flow.

Metrics: MM2's per-partition MBeans (``replication-latency-ms``, ``record-age-ms``…) need a
JMX client, which Python lacks without an agent jar; we measure lag and record rates from
end offsets on both clusters instead (``OffsetLagProbe``), which works the same for every
replicator, and add the heartbeat age of each flow (how old the newest upstream heartbeat
on the target is) where upstream heartbeats exist (active/active or chained setups).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaException, TopicPartition

from mirrordrill.harness.drill.replicators.checkpoint_catch_up import await_carried_checkpoints
from mirrordrill.harness.drill.replicators.errors import ReplicatorError
from mirrordrill.harness.drill.replicators.interface import (
    DEFAULT_STOP_GRACE_S,
    FLIGHT_RECORDING_FILE,
    CheckpointWait,
    MadeOnCluster,
    Report,
    RunInputs,
)
from mirrordrill.harness.drill.replicators.measurements import ReplicatorMetrics
from mirrordrill.harness.drill.replicators.mm2_group import Mm2Group, Mm2Node, plan_nodes
from mirrordrill.harness.drill.replicators.mm2_topics import (
    mm2_internal_topics,
    read_checkpoints,
    read_heartbeats,
    upstream_heartbeat_age,
)
from mirrordrill.harness.drill.replicators.setup import DRILL_FLOW_INTERVALS, FlowSpec, ReplicationSetup, replication_factor_for
from mirrordrill.harness.lab.brokers.broker import LOG4J_CONFIG
from mirrordrill.primitives.bootstrap import Artifacts, Bootstrap
from mirrordrill.primitives.jvm_flight_recording import recording_flags
from mirrordrill.primitives.jvm_temp import temp_dir_flag
from mirrordrill.primitives.kafka.reading import ends_after_last_record
from mirrordrill.primitives.process import ManagedProcess
from mirrordrill.primitives.redaction import redact_settings
from mirrordrill.primitives.versions import kafka_version
from mirrordrill.replicator.config.render import to_mm2_properties
from mirrordrill.replicator.config.settings import ReplicatorConfig
from mirrordrill.replicator.mm2_format import Checkpoint, Heartbeat
from mirrordrill.replicator.spark_stream import INTERCEPTOR_CLASS, TRACE_DIR_SETTING

if TYPE_CHECKING:
    from mirrordrill.harness.drill.loops import IdentityLoop
    from mirrordrill.harness.drill.schema import FlowDef, Scenario
    from mirrordrill.replicator.policy import ReplicationPolicy

MAIN_CLASS = "org.apache.kafka.connect.mirror.MirrorMaker"

DRILL_WORKER_INTERVALS: Mapping[str, str] = {"offset.flush.interval.ms": "5000"}
"""Connect worker drill interval for each target cluster (default 60000 ms)."""

STARTUP_SETTINGS: Mapping[str, str] = {"plugin.discovery": "service_load"}
"""Start-up speed only: skip Connect's reflective plugin scan (MM2 logs this advice itself)."""


EXACTLY_ONCE_WORKER_SETTINGS: Mapping[str, str] = {"exactly.once.source.support": "enabled"}
"""Per target (``B.``): MM2 reads it only there; a top-level one is silently ignored."""

EXACTLY_ONCE_FLOW_SETTINGS: Mapping[str, str] = {"consumer.isolation.level": "read_committed"}
"""``MirrorSourceConnector`` declares exactly-once support only when it reads the source committed."""

# run --trace: the bundled replicator's producer interceptor (its jar joins MM2's class path) in the
# producers that write a target's copies, tracing into ``trace`` of each node's folder (its working directory)
TRACE_WORKER_SETTINGS = {"producer.interceptor.classes": INTERCEPTOR_CLASS, f"producer.{TRACE_DIR_SETTING}": "trace"}
_STARTED_SOURCE = re.compile(r"Started MirrorSourceConnector with \d+ topic-partitions")


# ======================================================================================
# The processes
# ======================================================================================
def mm2_argv(java: str, heap_mb: int, classpath: Sequence[Path], node: Mm2Node, flight_recording: bool) -> list[str]:
    """One MM2 node's command line (dedicated mode for its target), with a flight recording when asked."""
    return [
        java, f"-Xms{min(128, heap_mb)}m", f"-Xmx{heap_mb}m",
        "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:+ExitOnOutOfMemoryError",
        "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={LOG4J_CONFIG}",
        f"-Dkafka.logs.dir={node.workdir}", temp_dir_flag(node.workdir),
        *(recording_flags(node.workdir / FLIGHT_RECORDING_FILE) if flight_recording else []),
        "-cp", ":".join(str(p) for p in classpath),
        MAIN_CLASS, str(node.config_path), "--clusters", node.target,
    ]


class MirrorMaker2Replicator(Mm2Group):
    """Real Apache MirrorMaker 2 (Kafka's ``connect-mirror`` jars) in dedicated mode."""

    kind = "mirrormaker2"
    label = "MirrorMaker 2"
    default_ready_timeout_s = 180.0
    cannot_restore_history = (
        "MirrorMaker 2 cannot: its cycle check (MirrorSourceConnector.isCycle) never copies '<cluster>.<topic>' into "
        "<cluster>, and no ReplicationPolicy names a remote topic back to its original name")
    reads_fields = frozenset({"mirrormaker2"})
    sweepable = True
    flight_recordable = True
    traces_records = True  # through the bundled replicator's interceptor (TRACE_WORKER_SETTINGS)
    nodes_setting = "replication.mirrormaker2.nodes"

    @classmethod
    def options_for(cls, replication, run: RunInputs) -> dict:
        mm2 = replication.mirrormaker2
        opts: dict = {"artifacts": run.artifacts} if run.artifacts is not None else {}
        return opts | ({"exactly_once": True} if mm2.exactly_once else {}) | {
            "nodes": mm2.nodes, "worker_settings": {k: _property(v) for k, v in mm2.worker.items()}} | run.diagnostics()

    @classmethod
    def version(cls) -> str:
        return f"MirrorMaker 2 (Kafka {kafka_version()})"

    @classmethod
    def delivery_mode(cls, mode: str | None, exactly_once: bool) -> str:
        return "exactly-once" if exactly_once else "at-least-once"

    @classmethod
    def made_for_flow(cls, flow: FlowDef, policy: ReplicationPolicy) -> list[MadeOnCluster]:
        return [*super().made_for_flow(flow, policy), *mm2_internal_topics(flow, policy)]

    @classmethod
    def identity_loop_problems(cls, s: Scenario, loop: IdentityLoop, error: Report, warn: Report) -> None:
        back = loop.flow.target  # MM2 breaks a cycle by the source alias in a remote topic's name (isCycle)
        error(("replication", "flows", loop.index),
              f"with the identity policy MirrorMaker 2 copies topic {loop.topic!r} round {loop.cycle} under the same name "
              f"forever: without the source-alias prefix nothing tells it the records came from {back}; use policy: default "
              f"(MM2 never sends {back}{s.replication.separator}{loop.topic} back to {back}), leave {loop.topic!r} out of this "
              "flow (topics_exclude), or run the bundled replicator (pyspark), which marks each record's path in a header")

    def __init__(self, setup: ReplicationSetup, *, heap_mb: int = 512, drill_intervals: bool = True,
                 worker_settings: Mapping[str, str] | None = None, exactly_once: bool = False,
                 artifacts: Artifacts | None = None, java: str | None = None,
                 classpath: Sequence[Path] | None = None, ready_timeout_s: float | None = None,
                 nodes: int = 1, flight_recording: bool = False, trace_records: bool = False) -> None:
        """``worker_settings`` are Connect worker keys for every target (``<target>.<key>``).

        ``exactly_once``: MM2's exactly-once mode (``exactly.once.source.support = enabled``): each
        poll's records and their source offsets go to the target in one transaction, so a
        ``read_committed`` consumer sees no copy twice after MM2 is killed. Off by default, as in MM2.

        ``nodes``: processes per target with the same configuration, one Connect group (internal REST on).

        ``flight_recording``: each node's JVM records into ``FLIGHT_RECORDING_FILE`` in its folder;
        ``trace_records``: its producers trace each record into ``trace/`` there (``TRACE_WORKER_SETTINGS``).

        The JVM and jars come from ``java``/``classpath``, else ``artifacts``, else the bootstrap cache.
        """
        super().__init__(setup, ready_timeout_s)
        self.heap_mb = heap_mb
        self.drill_intervals = drill_intervals
        self.worker_settings = {k: str(v) for k, v in (worker_settings or {}).items()}
        self.exactly_once = exactly_once
        self.flight_recording = flight_recording
        if java is None or classpath is None:
            bootstrap = Bootstrap()
            java = java or (artifacts.java if artifacts else bootstrap.java())
            classpath = classpath or (artifacts.mirrormaker_classpath if artifacts
                                      else bootstrap.jvm_classpath("mirrormaker"))
        if trace_records:
            classpath = [*classpath, artifacts.replicator_jar if artifacts else Bootstrap().replicator_jar()]
            self.worker_settings = {**TRACE_WORKER_SETTINGS, **self.worker_settings}
        self._java, self._classpath = java, tuple(Path(p) for p in classpath)
        self.replicas = nodes
        self._start_offsets: dict[str, int] = {}  # each log's size at the last start: a group's checks read them all
        self.nodes = self.with_secret_dir(plan_nodes(setup, setup.folder / "mirrormaker2", nodes))
        for node in self.nodes:
            argv = mm2_argv(self._java, self.heap_mb, self._classpath, node, self.flight_recording)
            node.process = ManagedProcess(name=node.name, argv=argv, log_path=node.log_path,
                                          cwd=node.workdir, stop_timeout_s=DEFAULT_STOP_GRACE_S)
            # Validate the whole file now, with placeholder addresses: bad settings fail before any start.
            self.node_config(node, resolve_addresses=False)

    # --- configuration ----------------------------------------------------------------
    def flow_defaults(self, flow: FlowSpec) -> dict[str, str]:
        """What this adapter adds under a flow's own settings (replication factors, drill intervals)."""
        target_rf = str(replication_factor_for(self.brokers_of(flow.target)))
        syncs_on = flow.target if flow.settings.get("offset-syncs.topic.location") == "target" else flow.source
        defaults = {
            "replication.factor": target_rf,
            "checkpoints.topic.replication.factor": target_rf,
            "heartbeats.topic.replication.factor": target_rf,
            "offset-syncs.topic.replication.factor": str(replication_factor_for(self.brokers_of(syncs_on))),
        }
        if self.drill_intervals:
            defaults.update(DRILL_FLOW_INTERVALS)
        if self.exactly_once:
            defaults.update(EXACTLY_ONCE_FLOW_SETTINGS)
        return defaults

    def worker_defaults(self, target: str) -> dict[str, str]:
        """Connect worker settings for the herders that write into ``target``."""
        rf = str(replication_factor_for(self.brokers_of(target)))
        settings = {"offset.storage.replication.factor": rf, "config.storage.replication.factor": rf,
                    "status.storage.replication.factor": rf, **STARTUP_SETTINGS}
        if self.drill_intervals:
            settings.update(DRILL_WORKER_INTERVALS)
        if self.exactly_once:
            settings.update(EXACTLY_ONCE_WORKER_SETTINGS)
        return {**settings, **self.worker_settings}

    def node_config(self, node: Mm2Node, resolve_addresses: bool = True) -> ReplicatorConfig:
        """The validated model of one process's file (addresses as seen from its location)."""
        return self.setup.replicator_config(
            node.flows, node.location,
            flow_defaults={f.name: self.flow_defaults(f) for f in node.flows},
            cluster_settings={node.target: self.worker_defaults(node.target)},
            top_settings={**STARTUP_SETTINGS, **self.rest_settings(node)},
            resolve_addresses=resolve_addresses,
        )

    def render(self, node: Mm2Node) -> str:
        """The ``mm2.properties`` text of one process (needs the environment's addresses)."""
        config = self.node_config(node)
        header = [
            f"# {node.name}: flows {', '.join(f.name for f in node.flows)}; run with --clusters {node.target}.",
            f"# Clusters are addressed as seen from {node.location!r}"
            + (" (remote ones through the WAN proxies)." if len(config.clusters) > 1 else "."),
            "# Replication factors are sized to each cluster; "
            + ("drill intervals (5 s refresh/sync/checkpoint, 5 s offset flush) are on."
               if self.drill_intervals else "MM2's own intervals are kept (drill_intervals=False)."),
        ]
        return "\n".join(header) + "\n" + to_mm2_properties(config, include_mirrordrill=False)

    # --- processes --------------------------------------------------------------------
    def node_for(self, source: str, target: str) -> Mm2Node:
        flow = self.setup.flow(source, target)
        return next(n for n in self.nodes if flow in n.flows)

    def _flows_not_ready(self, node: Mm2Node, started_at: float, log: str) -> list[str]:
        since_ms = int(started_at * 1000) - 1000
        reasons = []
        started = len(_STARTED_SOURCE.findall(log))
        if started < len(node.flows):
            reasons.append(f"{node.name}: {started}/{len(node.flows)} source connectors started")
        beats: set[tuple[str, str]] | None = None
        for flow in node.flows:
            config = self.setup.flow_config(flow, self.flow_defaults(flow))
            if config.schedule_seconds("emit_heartbeats") is not None:
                if beats is None:
                    beats = {(h.source_alias, h.target_alias) for h in self.heartbeats(node.target, since_ms=since_ms)}
                if (flow.source, flow.target) not in beats:
                    reasons.append(f"{flow.name}: no heartbeat on {node.target} yet")
            if self._probe.selected_topics(flow):
                pattern = rf"replicating \d+ topic-partitions {re.escape(flow.source)}->{re.escape(flow.target)}:"
                if not re.search(pattern, log):
                    reasons.append(f"{flow.name}: no source task replicating yet")
        return reasons

    def forget_source_positions(self, source: str) -> None:
        """MM2 keeps a flow's source positions in Connect's offsets topic on the target
        (``mm2-offsets.<source>.internal``); after the source was wiped those positions are stale,
        and one below the new log end would make MM2 skip records. Deleted; MM2 creates it again."""
        for target in {f.target for f in self.setup.flows if f.source == source}:
            topic = f"mm2-offsets.{source}.internal"
            admin = self.setup.env.cluster(target).admin()
            if topic not in admin.list_topics(timeout=15).topics:
                continue
            admin.delete_topics([topic], operation_timeout=30)[topic].result(timeout=35)
            deadline = time.monotonic() + 30
            while topic in admin.list_topics(timeout=15).topics and time.monotonic() < deadline:
                time.sleep(0.5)  # deletion completes asynchronously; a worker must not find the old one

    # --- MM2's own topics -------------------------------------------------------------
    def heartbeats(self, cluster: str, topic: str = "heartbeats", since_ms: int | None = None) -> list[Heartbeat]:
        """Heartbeats in ``topic`` on ``cluster`` (``heartbeats``, or ``<src>.heartbeats`` upstream ones)."""
        return read_heartbeats(self.setup, cluster, topic, since_ms)

    def checkpoints(self, source: str, target: str, group: str | None = None) -> list[Checkpoint]:
        """Every checkpoint of flow ``source->target`` (of ``group``, or all), in emission order."""
        self.setup.flow(source, target)
        return read_checkpoints(self.setup, source, target, group)

    def await_checkpoints(self, group: str, source: str, target: str, timeout_s: float) -> CheckpointWait:
        """MM2 checkpoints a group only after it finds it (``refresh.groups.interval.seconds``) and
        then every ``emit.checkpoints.interval.seconds``, each carrying the commit it translated: a
        move right after the commit would otherwise translate an older one, or none (earliest).

        Carrying the commit is not enough where the group read a partition to its end: MM2 maps a
        commit one past the newest offset sync at or below it, and the sync of a partition's last
        record is delayed until Connect's next offset flush. A checkpoint emitted before that sync
        reached the checkpoint task carries the commit but translates it to an older position, and
        the group replays the records in between (150 seen in a planned move). For such a
        partition the exact translation is one past the remote partition's newest record (read
        again on each pass: a drain that timed out still has records coming): wait for it too."""
        selector = self.setup.flow_config(self.setup.flow(source, target)).topic_selector()
        try:
            commits = self.source_commits(group, source, target, selector.should_checkpoint_topic)
            source_ends = self._probe.end_offsets(source, [TopicPartition(t, p) for t, p in commits])
        except (KafkaException, TimeoutError) as err:
            return CheckpointWait(False, f"not waited for: {group}'s commits or end offsets unreadable ({err})")
        wanted = {(selector.remote_topic(t), p): offset for (t, p), offset in commits.items()}
        at_end = [(selector.remote_topic(t), p) for (t, p), offset in commits.items() if source_ends.get((t, p)) == offset]
        return await_carried_checkpoints(wanted, at_end, timeout_s, lambda: self.checkpoints(source, target, group),
                                         lambda remote: self._exact_translations(target, remote))

    def _exact_translations(self, target: str, remote: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """One past the newest record of each remote partition, the exact translation of a commit at
        its source's end: its log end, less any transaction markers after it (exactly-once mode)."""
        c = self.setup.env.cluster(target)
        return ends_after_last_record(c.bootstrap, remote, security=c.security_config())

    def translate_offsets(self, group: str, source: str, target: str, *,
                          source_lost: bool = False) -> dict[tuple[str, int], int]:
        """The latest checkpoint per remote partition of ``group``: MM2's own translation, as emitted
        (read from the target alone, whether or not the source is lost)."""
        latest: dict[tuple[str, int], int] = {}
        try:
            for cp in self.checkpoints(source, target, group):
                latest[(cp.topic, cp.partition)] = cp.downstream_offset
        except (KafkaException, TimeoutError) as err:
            raise ReplicatorError(f"reading MM2 checkpoints of {source}->{target} on {target}: {err}") from err
        return latest

    def checkpoint_offsets(self, group: str, source: str, target: str) -> dict[tuple[str, int], int]:
        return self.translate_offsets(group, source, target)  # MM2's translation is its checkpoints

    def metrics(self) -> ReplicatorMetrics | None:
        """End-offset lag and rates per partition, plus each flow's upstream heartbeat age."""
        sample = self._probe.sample()
        notes = [*sample.notes, *filter(None, (upstream_heartbeat_age(self.setup, flow) for flow in self.setup.flows))]
        return ReplicatorMetrics(sample.taken_at, sample.method, sample.partitions, tuple(notes))

    # --- description ------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        nodes = [{**self.node_summary(node), "target": node.target, "location": node.location,
                  "argv": _short_argv(node.process.argv) if node.process else []} for node in self.nodes]
        return {
            "kind": self.kind, "policy": self.setup.policy, "separator": self.setup.separator,
            "heap_mb": self.heap_mb, "drill_intervals": self.drill_intervals, "exactly_once": self.exactly_once,
            "nodes_per_target": self.replicas, "worker_settings": redact_settings(self.worker_settings),
            "flows": [{"name": f.name, "topics": list(f.topics), "topics_exclude": list(f.topics_exclude),
                       "placement": f.placement, "settings": redact_settings(f.settings)} for f in self.setup.flows],
            "processes": nodes,
            "metrics_method": "end offsets on both clusters (no JMX); upstream heartbeat age where available",
            "warnings": [str(w) for w in self.setup.config_warnings()],
        }


def _short_argv(argv: Sequence[str]) -> list[str]:
    # The classpath is dozens of jars; a report needs to know where they are, not each name.
    out = list(argv)
    if "-cp" in out:
        i = out.index("-cp") + 1
        jars = out[i].split(":")
        out[i] = f"<{len(jars)} jars in {Path(jars[0]).parent}>"
    return out


def _property(value: str | int | float | bool) -> str:
    # YAML's true/false become Java's spelling, as a properties file expects
    return str(value).lower() if isinstance(value, bool) else str(value)
