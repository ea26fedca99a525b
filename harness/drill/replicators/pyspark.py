"""The bundled PySpark replicator as a replicator under test.

One replicator process per placement location (``python -m mirrordrill.replicator``), running every flow
placed there in one Spark session. Its configuration is the same flow description MM2 gets,
rendered as an MM2 properties file plus our ``mirrordrill.*`` keys, so both run identical drills.

Offset translation does not depend on the replicator being alive: it reads the target's own
records (each carries its source offset) with ``replicator.offset_index``, starting from the
group's committed offsets on the source, or, when the source is unreachable (an unplanned
failover), from the upstream offsets of the newest checkpoints on the target.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaException

from mirrordrill.harness.drill.replicators.class_archive import make_class_archive
from mirrordrill.harness.drill.replicators.errors import ReplicatorError
from mirrordrill.harness.drill.replicators.interface import DEFAULT_STOP_GRACE_S, FLIGHT_RECORDING_FILE, Report, RunInputs
from mirrordrill.harness.drill.replicators.measurements import ReplicatorMetrics
from mirrordrill.harness.drill.replicators.mm2_topics import latest_checkpoints
from mirrordrill.harness.drill.replicators.processes import ProcessNode, flow_placements
from mirrordrill.harness.drill.replicators.pyspark_lag import OwnFigures, merged_metrics, restored_topics
from mirrordrill.harness.drill.replicators.pyspark_launch import (
    SUBMITTED_FLIGHT_REFUSAL,
    cds_archive_path,
    check_slots_per_process,
    replicator_environment,
    replicator_jars,
    submitted_java_options,
)
from mirrordrill.harness.drill.replicators.pyspark_standby import (
    SECOND_LOG,
    STANDBY_WORK,
    StandbyNodes,
    driver_pair,
    lease_settings,
    standby_spec,
    transactional_settings,
)
from mirrordrill.harness.drill.replicators.record_translation import translate_group
from mirrordrill.harness.drill.replicators.setup import DRILL_FLOW_INTERVALS, FlowSpec, ReplicationSetup, replication_factor_for
from mirrordrill.harness.drill.replicators.start_log import StartLog
from mirrordrill.harness.lab.spark.deployment import STANDALONE, SparkDeployment
from mirrordrill.harness.lab.spark.standalone import spark_env
from mirrordrill.harness.lab.spark.submit import SubmittedDriver, driver_env, package_replicator, submit_argv
from mirrordrill.primitives.bootstrap import Artifacts
from mirrordrill.primitives.process import ManagedProcess
from mirrordrill.primitives.versions import spark_version
from mirrordrill.replicator.config.render import to_mm2_properties
from mirrordrill.replicator.config.settings import ReplicatorConfig

if TYPE_CHECKING:
    from mirrordrill.harness.drill.loops import IdentityLoop
    from mirrordrill.harness.drill.schema import ReplicationDef, Scenario

SUBMITTED_READY_TIMEOUT_S = 480.0
EXACT_LAG_MAX_AGE_S = 10.0  # the replicator probes its lag every 2 s; older figures are not trusted


class ReplicatorNode(ProcessNode):
    """One replicator process: the flows placed in one data center."""

    config_name = "replicator.properties"
    log_name = "replicator.log"

    @property
    def name(self) -> str:
        return f"pyspark replicator @{self.location}"

    @property
    def status_path(self) -> Path:
        return self.workdir / "work" / "metrics.json"


def pyspark_flow_defaults(target_brokers: int, mode: str | None, drill_intervals: bool,
                          trace_records: bool = False) -> dict[str, str]:
    """A flow's settings under its own: replication factors sized to the target, drill intervals, the mode,
    and the trace of each record (``run --trace``)."""
    rf = str(replication_factor_for(target_brokers))
    defaults = {"replication.factor": rf, "checkpoints.topic.replication.factor": rf,
                "heartbeats.topic.replication.factor": rf, "offset-syncs.topic.replication.factor": rf}
    if drill_intervals:
        defaults.update(DRILL_FLOW_INTERVALS)
    if mode:
        defaults["mirrordrill.mode"] = mode
    if trace_records:
        defaults["mirrordrill.trace.records"] = "true"
    return defaults


def plan_nodes(setup: ReplicationSetup, root: Path) -> list[ReplicatorNode]:
    """One replicator process per placement location, running every flow placed there."""
    by_location: dict[str, list[FlowSpec]] = {}
    for flow in setup.flows:
        by_location.setdefault(flow.location, []).append(flow)
    return [ReplicatorNode(loc, flows, root / loc) for loc, flows in sorted(by_location.items())]


def app_args(node: ReplicatorNode, work: str = "work") -> list[str]:
    """``python -m mirrordrill.replicator``'s arguments for one of a node's drivers: its configuration and work folder."""
    return ["--config", str(node.config_path), "--workdir", str(node.workdir / work)]


class PySparkReplicator(StandbyNodes[ReplicatorNode]):
    """mirrordrill's own replicator (Spark Structured Streaming), one process per location."""

    kind = "pyspark"
    label = "PySpark replicator"
    reads_fields = frozenset({"mode", "spark", "standby"})
    uses_spark = True
    sweepable = True
    flight_recordable = True  # the driver JVM of a local master, which runs the tasks too
    traces_records = True  # its sinks' interceptor writes the trace (flow setting mirrordrill.trace.records)
    warns_ignored_settings = True  # it accepts MM2's settings and ignores some of them

    @classmethod
    def options_for(cls, replication, run: RunInputs) -> dict:
        opts: dict = {"artifacts": run.artifacts} if run.artifacts is not None else {}
        return (opts | ({"mode": replication.mode} if replication.mode else {}) | {"spark": run.spark()}
                | run.diagnostics() | ({"standby": replication.standby} if replication.standby else {}))

    @classmethod
    def flight_recording_refusal(cls, run: RunInputs) -> str | None:
        return SUBMITTED_FLIGHT_REFUSAL if run.spark().submitted else None

    @classmethod
    def version(cls) -> str:
        from mirrordrill.harness.drill.run_facts import project_version  # run_facts asks this class, so not at import
        return f"mirrordrill {project_version()} (Spark {spark_version()})"

    @classmethod
    def delivery_mode(cls, mode: str | None, exactly_once: bool) -> str:
        return mode or "microbatch"

    @classmethod
    def planned_nodes(cls, replication: ReplicationDef) -> int:
        return len({location for _, location in flow_placements(replication)})  # one process per location

    @classmethod
    def identity_loop_problems(cls, s: Scenario, loop: IdentityLoop, error: Report, warn: Report) -> None:
        from mirrordrill.harness.drill.loops import unmarked_hops  # loops asks this class, so not at import
        unmarked_hops(s, loop, error)  # each record's path is in a header: the loop breaks unless a hop drops it
    # a readiness check reads one status file, which the process rewrites at least every 0.25 s until
    # its first record moves; a check of MM2 reads the target's heartbeats topic, so it keeps 1 s
    ready_poll_s = 0.25
    default_ready_timeout_s = 240.0
    cannot_restore_history = None  # its flows take mirrordrill.restore.history (replicator.filters.TopicSelector)

    def __init__(self, setup: ReplicationSetup, *, mode: str | None = None, drill_intervals: bool = True,
                 spark_master: str | None = None, artifacts: Artifacts | None = None,
                 ready_timeout_s: float | None = None, spark: SparkDeployment | None = None,
                 flight_recording: bool = False, standby: bool | str = False, trace_records: bool = False) -> None:
        """``mode`` (microbatch|realtime) applies to every flow unless a flow sets ``mirrordrill.mode``.

        ``spark`` says where Spark runs (``local``, ``standalone``, a URL; see harness.lab.spark.deployment);
        ``spark_master`` is the older way of giving an in-process master such as ``local[4]``.
        ``flight_recording``: each driver JVM records into ``FLIGHT_RECORDING_FILE`` (local masters); ``trace_records``: --trace.
        ``standby``: each process runs as two drivers, an active one and a warmed standby (``pyspark_standby``);
        ``"lease"``: they share the lease alone, not the node's lock file (as on two machines).
        """
        super().__init__(setup, ready_timeout_s)
        self.flight_recording, self.trace_records = flight_recording, trace_records
        self.mode = mode
        self.drill_intervals = drill_intervals
        self.spark = spark or SparkDeployment(master=spark_master or "local")
        self.spark_master = self.spark.local_master()
        self.spark_master_url: str | None = None  # where a submitted replicator went
        # every process start seen in a status file, by (node, start ms): a restarted process
        # overwrites the file, so each start is kept as it is read (see ``start_times``)
        self._starts = StartLog()
        self._metrics_urls: dict[str, str] = {}  # node name -> its process's Prometheus URL, once known
        if self.spark.submitted and ready_timeout_s is None:
            # executors are JVMs of their own, started by the workers: on a busy 2-core machine
            # they registered two minutes after the driver (measured), then the queries start
            self.ready_timeout_s = SUBMITTED_READY_TIMEOUT_S
        self._artifacts = artifacts
        self._java = artifacts.java if artifacts is not None else None
        self._jars = replicator_jars(artifacts)
        self.nodes = self.with_secret_dir(plan_nodes(setup, setup.folder / "pyspark"))
        for node in self.nodes:
            node.process = self._driver(node, node.name, node.log_path)
        self.standby = standby
        self._pairs = {n.name: driver_pair(self._driver(n, f"{n.name} (second driver)", n.workdir / SECOND_LOG,
                                                        STANDBY_WORK), n) for n in self.nodes} if standby else {}
        for node in self.nodes:
            self.node_config(node, resolve_addresses=False)  # bad settings fail before anything starts

    def _env(self, node: ReplicatorNode) -> dict[str, str]:
        return replicator_environment(self._jars, self.cds_archive,
                                      node.workdir / FLIGHT_RECORDING_FILE if self.flight_recording else None)

    @property
    def cds_archive(self) -> Path:
        return cds_archive_path(self._java, self._jars)

    # --- configuration ----------------------------------------------------------------
    def flow_defaults(self, flow: FlowSpec) -> dict[str, str]:
        """Replication factors sized to the clusters and the same drill intervals MM2 gets."""
        defaults = pyspark_flow_defaults(self.brokers_of(flow.target), self.mode, self.drill_intervals, self.trace_records)
        return defaults | (transactional_settings(self.setup.env.owned_prefix) if self.standby else {})

    def node_config(self, node: ReplicatorNode, resolve_addresses: bool = True) -> ReplicatorConfig:
        master = self.spark_master_url or self.spark_master
        # Prometheus text on a port the system picks (drills run several processes side by side);
        # each process names its URL in metrics.json, and ``status`` logs it.
        top = {"mirrordrill.metrics.port": "0"}
        if master:
            top["mirrordrill.spark.master"] = master
        if self.spark.driver_jit:
            top["mirrordrill.driver.jit"] = self.spark.driver_jit
        if self.standby:
            top |= lease_settings(self.setup.env.owned_prefix, node.location,
                                  node.workdir if self.standby is True else None)
        return self.setup.replicator_config(
            node.flows, node.location, flow_defaults={f.name: self.flow_defaults(f) for f in node.flows},
            top_settings=top, resolve_addresses=resolve_addresses)

    def render(self, node: ReplicatorNode) -> str:
        header = (f"# {node.name}: flows {', '.join(f.name for f in node.flows)}; clusters addressed as seen "
                  f"from {node.location!r}.\n")
        return header + to_mm2_properties(self.node_config(node))

    # --- processes --------------------------------------------------------------------
    def _prepare(self) -> None:
        if self.spark.submitted and self.spark_master_url is None:
            self._submit_to_cluster()
        elif not self.spark.submitted and not self.cds_archive.is_file():
            # once per machine (a minute or two): every later replicator start maps it
            self.setup.env.log(f"making the Spark driver's class-data archive {self.cds_archive} (once: a "
                               "one-broker cluster starts for a short replication whose classes it keeps)")
            if not make_class_archive(self.cds_archive, self._jars, self.setup.env.log, self._artifacts):
                self.setup.env.log("no class-data archive made; the replicator starts without one")
        super()._prepare()

    def _submit_to_cluster(self) -> None:
        """Find (or start) the master, check its free task slots, write each node's spark-submit line."""
        drivers = [(node, proc, work) for node in self.nodes for proc, work in self.drivers_of(node)]
        if self.spark.master == STANDALONE:
            # a standby's executors run beside the active's: the cluster this machine starts offers both
            cluster = self.setup.env.spark_standalone(standby_spec() if self.standby else None)
            url, status = cluster.url, cluster.status()
        else:
            url, status = self.spark.master, None  # someone else's cluster: its UI address is unknown here
        self.spark_master_url = url
        if status is not None:
            check_slots_per_process(status, self.spark.slots,
                                    {proc.name: self._realtime_partitions(node) for node, proc, _ in drivers})
        archive, launcher = package_replicator(self.setup.folder / "pyspark" / "package")
        for node, proc, work in drivers:
            java = submitted_java_options(self.node_config(node), node.workdir / work, self.spark.master == STANDALONE)
            proc.argv = submit_argv(self.spark, url, self._jars, archive, launcher,
                                    [*app_args(node, work), "--jars", ",".join(str(j) for j in self._jars)], java)

    def _driver(self, node: ReplicatorNode, name: str, log_path: Path, work: str = "work") -> ManagedProcess:
        """One of the node's drivers, writing in ``node.workdir / work``."""
        if self.spark.submitted:  # the command line needs the master's URL: written at start
            return SubmittedDriver(name=name, argv=[], log_path=log_path, cwd=node.workdir,
                                   env=driver_env(spark_env(self._java)), stop_timeout_s=DEFAULT_STOP_GRACE_S)
        return ManagedProcess(name=name, argv=[sys.executable, "-m", "mirrordrill.replicator", *app_args(node, work)],
                              log_path=log_path, cwd=node.workdir, env=self._env(node), stop_timeout_s=DEFAULT_STOP_GRACE_S)

    def _realtime_partitions(self, node: ReplicatorNode) -> int:
        """Source partitions of the node's real-time flows: each holds one task slot for the query's life."""
        realtime = {(f.source, f.target) for f in self.node_config(node).enabled_flows() if f.mode == "realtime"}
        return sum(sum(self._probe.selected_topics(f).values()) for f in node.flows
                   if (f.source, f.target) in realtime)

    def status(self, node: ReplicatorNode) -> dict:
        """The replicator's own metrics.json (empty before its first write)."""
        try:
            pair = self._pairs.get(node.name)
            doc = json.loads((pair.status_path() if pair is not None else node.status_path).read_text())
        except (OSError, ValueError):
            return {}
        startup = doc.get("startup")
        if isinstance(startup, dict) and startup.get("started_at_ms"):
            self._starts.record(node.name, startup)
        url = doc.get("prometheus_url")
        if isinstance(url, str) and self._metrics_urls.get(node.name) != url:  # a restart picks a new port
            self._metrics_urls[node.name] = url
            self.setup.env.log(f"{node.name} metrics: {url}")
        return doc

    def start_times(self) -> list[dict[str, Any]]:
        for node in self.nodes:
            self.status(node)  # the newest process's figures
        return self._starts.entries()

    def _node_not_ready(self, node: ReplicatorNode, started_at: float, log: str) -> list[str]:
        """Ready when every flow emits heartbeats (where they are on) and, where it has topics, its Spark
        query is live.

        Live: the warm-up batch ended and, in real time, the query's tasks all run; a query merely
        started still has Spark's first-batch cost ahead, which the load's first records would wait for."""
        doc = self.status(node)
        if doc.get("written_ms", 0) < started_at * 1000:
            return [f"{node.name}: no status written yet"]
        reasons = []
        for flow in node.flows:
            st = doc.get("status", {}).get(flow.name, {})
            # a flow with heartbeats off (drills on existing clusters) shows its loop by the status alone
            emits = self.setup.flow_config(flow, self.flow_defaults(flow)).schedule_seconds("emit_heartbeats")
            if emits is not None and not st.get("heartbeats"):
                reasons.append(f"{flow.name}: no heartbeat yet")
            if self._probe.selected_topics(flow) and not st.get("query_starts"):
                reasons.append(f"{flow.name}: Spark query not started yet")
            elif self._probe.selected_topics(flow) and not st.get("live"):
                reasons.append(f"{flow.name}: Spark query started, not live yet (warm-up batch or real-time tasks "
                               "still starting)")
        if (pair := self._pairs.get(node.name)) is not None and not pair.standing_by():
            reasons.append(f"{node.name}: its standby driver is not warmed up and waiting yet")
        return reasons

    # --- offsets ----------------------------------------------------------------------
    def translate_offsets(self, group: str, source: str, target: str, *,
                          source_lost: bool = False) -> dict[tuple[str, int], int]:
        """Exact translation: first target position whose source offset is >= the group's commit.

        The commits come from the source when it answers, else from the newest checkpoints on the
        target (see ``record_translation.translate_on_target``).
        """
        return translate_group(self.setup, self.source_commits, group, source, target, source_lost)

    def checkpoint_offsets(self, group: str, source: str, target: str) -> dict[tuple[str, int], int]:
        try:
            checkpoints = latest_checkpoints(self.setup, group, source, target)
        except (KafkaException, TimeoutError) as err:
            raise ReplicatorError(f"reading {group}'s checkpoints of {source}->{target} on {target}: {err}") from err
        return {key: cp.downstream_offset for key, cp in checkpoints.items()}

    # --- observation ------------------------------------------------------------------
    def metrics(self) -> ReplicatorMetrics | None:
        """End-offset lag and rates (as for every replicator), corrected by the replicator's own exact
        lag, plus its ack latency (see ``pyspark_lag``)."""
        sample = self._probe.sample()
        own = OwnFigures()
        fresh_after_ms = (time.time() - EXACT_LAG_MAX_AGE_S) * 1000
        for node in self.nodes:
            doc = self.status(node)
            own.add(doc, fresh=node.process is not None and node.process.running
                    and doc.get("written_ms", 0) >= fresh_after_ms)
        return merged_metrics(sample, own, restored_topics(self.setup, self._probe))

    def describe(self) -> dict[str, Any]:
        nodes = [{**self.node_summary(node), "location": node.location, "status_path": str(node.status_path),
                  "metrics_url": self._metrics_urls.get(node.name)} for node in self.nodes]
        return {"kind": self.kind, "mode": self.mode or "per flow (default microbatch)",
                "spark": {"master": self.spark.master, "master_url": self.spark_master_url,
                          "executors": self.spark.describe_executors()},
                "policy": self.setup.policy, "separator": self.setup.separator,
                "flows": [{"name": f.name, "topics": list(f.topics), "placement": f.placement,
                           "settings": dict(f.settings)} for f in self.setup.flows],
                "processes": nodes, "warnings": [str(w) for w in self.setup.config_warnings()]}
