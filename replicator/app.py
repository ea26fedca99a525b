"""One flow of the replicator process (``process.FlowSupervisor``): its Spark query and its control plane.

Data moves in Spark (``spark_stream``). Around it, per flow and on MM2's schedules: topic
discovery and remote-topic creation (a query restarts when its topic set changes, and after
any failure, right after the newest record it copied into the target, so nothing is lost or
written twice: ``resume``), config sync, heartbeats, checkpoints with exact offset
translation, optional group offset sync, and metrics.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from mirrordrill.primitives.kafka.security import java_to_librdkafka
from mirrordrill.replicator import checkpoint_folder
from mirrordrill.replicator.checkpoints import CheckpointEmitter
from mirrordrill.replicator.config.flow import FlowConfig
from mirrordrill.replicator.config.settings import ReplicatorConfig
from mirrordrill.replicator.flow_reads import FlowLag, SourceReads, StartReads
from mirrordrill.replicator.heartbeats import HeartbeatEmitter
from mirrordrill.replicator.history import HistoryEnds
from mirrordrill.replicator.metrics import MetricsTracker
from mirrordrill.replicator.offset_index import OffsetIndex
from mirrordrill.replicator.planted_faults import CheckpointFault, DataPathFault
from mirrordrill.replicator.query_gate import QueryGate
from mirrordrill.replicator.resume import FlowOrigin, StartPositions
from mirrordrill.replicator.schedule import Every
from mirrordrill.replicator.shared_warm_up import SharedWarmUp
from mirrordrill.replicator.spark_stream import (
    WARM_HEARTBEATS,
    QuietStops,
    StreamPlan,
    start_query,
    stop_query,
    tasks_running,
    warm_up,
)
from mirrordrill.replicator.startup import StartupClock
from mirrordrill.replicator.topic_sync import TopicSync

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

log = logging.getLogger("replicator")

def librdkafka_conf(java_conf: dict[str, str]) -> dict[str, Any]:
    """The control plane's librdkafka settings from the Java clients' (connection and security only)."""
    return java_to_librdkafka(java_conf) | {"log_level": 3}


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


QUERY_DIR = "query"


def checkpoint_base(config: ReplicatorConfig, flow: FlowConfig, workdir: Path) -> Path:
    """The flow's checkpoint folder: the configuration's, else one under the process's workdir."""
    return Path(config.flow_checkpoint_dir(flow) or workdir / "checkpoints" / _safe_name(flow.name))


@dataclass
class FlowStatus:
    topics: list[str] = field(default_factory=list)
    query_starts: int = 0
    query_failures: int = 0
    last_error: str | None = None
    heartbeats: int = 0
    checkpoints: int = 0
    # the process's warm-up batch ended and the running query's tasks run (real time) or its
    # first micro-batch is done: records sent now do not wait for Spark's first-batch cost
    live: bool = False
    # The query's last micro-batch as Spark reports it (batch id, rows, where its time went):
    # what a person asks first when replication is slow.
    last_batch: dict[str, Any] | None = None

    def record_batch(self, progress: dict[str, Any] | None) -> None:
        """The query's last progress report, when it has one."""
        if progress:
            self.last_batch = {"batch_id": progress.get("batchId"), "input_rows": progress.get("numInputRows"),
                               "duration_ms": progress.get("durationMs", {})}


class FlowRuntime:
    """One flow: its Spark query and its control plane."""

    def __init__(self, config: ReplicatorConfig, flow: FlowConfig, workdir: Path, clock: StartupClock | None = None,
                 quiet_stops: QuietStops | None = None):
        self.flow = flow
        self.clock = clock or StartupClock()
        self.quiet_stops = quiet_stops or QuietStops()  # the process's, shared by its flows
        # none chosen: the flow runs its warm-up's round trip itself; a process chooses one flow for
        # all once their first syncs showed whose link is quickest (``FlowSupervisor.run``)
        self.shared_warm_up = SharedWarmUp()
        self.name = flow.name
        self.policy = flow.replication_policy()
        self.selector = flow.topic_selector()
        src_admin_conf = config.client_config(flow, "source_admin")
        tgt_admin_conf = config.client_config(flow, "target_admin")
        self.source_bootstrap = src_admin_conf["bootstrap.servers"]
        self.target_bootstrap = tgt_admin_conf["bootstrap.servers"]
        # What every control-plane client of each side connects with (address and security).
        self._source_conn = librdkafka_conf(src_admin_conf)
        self._target_conn = librdkafka_conf(tgt_admin_conf)
        self.source_consumer_conf = config.client_config(flow, "source_consumer")
        self.target_producer_conf = config.client_config(flow, "target_producer")
        self.source_admin = AdminClient(librdkafka_conf(src_admin_conf))
        self.target_admin = AdminClient(librdkafka_conf(tgt_admin_conf))
        self.target_producer = Producer(librdkafka_conf(tgt_admin_conf) | {"acks": "all", "linger.ms": 5})
        self.topic_sync = TopicSync(self.selector, self.source_admin, self.target_admin,
                                    flow.config_property_filter() if flow.sync_topic_configs_enabled else None,
                                    flow.replication_factor)
        self.index = OffsetIndex(librdkafka_conf(tgt_admin_conf))
        self.checkpoints = CheckpointEmitter(
            flow.source, self.selector, flow.group_filter(), self.source_admin, self.target_admin,
            self._source_conn, self._target_conn, self.target_producer, self.index, self.policy.checkpoints_topic(flow.source),
            flow.checkpoints_topic_replication_factor, flow.sync_group_offsets_enabled,
            fault=CheckpointFault.from_env(os.environ))
        self.heartbeats = HeartbeatEmitter(flow.source, flow.target, self.policy.heartbeats_topic(),
                                           self.target_admin, self.target_producer,
                                           flow.heartbeats_topic_replication_factor)
        self.starting_offsets = config.starting_offsets(flow)
        self.data_fault = DataPathFault.from_env(os.environ)  # the mutation suite's only; None in real runs
        base = checkpoint_base(config, flow, workdir)
        # Spark's checkpoint for the running query only: every start begins a fresh one (``_start``)
        self.checkpoint_dir = base / QUERY_DIR
        self.start_positions = StartPositions(base / "start-positions.json", self.starting_offsets)
        self.history = HistoryEnds(base / "history-ends.json")  # restore_history only
        self.origin = FlowOrigin(flow.source, flow.replication_policy_class == "identity" and flow.provenance_header)
        self.metrics_dir = workdir / "metrics" / _safe_name(flow.name)
        # the warm-up's heartbeats go through the flow's sink too: not replication, not counted
        # (as the heartbeats the emitter writes with its own producer are not)
        self.metrics = MetricsTracker(self.metrics_dir, frozenset({self.policy.heartbeats_topic()}))
        self.query: StreamingQuery | None = None
        self.gate = QueryGate()  # the process's stop waits for a query change, not for a round trip
        self.topics: tuple[str, ...] = ()
        self.partitions: dict[str, int] = {}
        self.status = FlowStatus()
        self.refresh = Every(flow.schedule_seconds("refresh_topics"))
        self.config_sync = Every(flow.schedule_seconds("sync_topic_configs"))
        self.heartbeat_every = Every(flow.schedule_seconds("emit_heartbeats"))
        self.checkpoint_every = Every(flow.schedule_seconds("emit_checkpoints"))
        # the control plane's reads and the lag thread's, each with clients of its own (``flow_reads``)
        self.source_reads = SourceReads(self.source_admin, self._source_conn)
        self.start_reads = StartReads(self.name, self.selector, self.origin, self._target_conn, self.source_reads,
                                      self.start_positions, self.history if flow.restore_history else None,
                                      self.data_fault, flow.transactional_ids)
        self.lag_reads = FlowLag(self.selector, self.origin, self.history, self._source_conn, self._target_conn)
        self._restart_after = 0.0
        self._warmed: threading.Event | None = None  # set when this flow's warm-up ended
        # start offsets read ahead, while the JVM starts: (topics, partitions, offsets JSON)
        self._prepared: tuple[tuple[str, ...], dict[str, int], str] | None = None
        # on a restart, the records its query was last set to read first (a backlog); 0 on a first start
        self._waiting_at_start = 0
        # a query ended in this process: its cancelled tasks' records may still be on their way
        self._settle_before_start = False

    # --- data path --------------------------------------------------------------------
    def plan(self) -> StreamPlan:
        f = self.flow
        return StreamPlan(
            name=self.name, source_alias=f.source, target_alias=f.target,
            source_bootstrap=self.source_bootstrap, target_bootstrap=self.target_bootstrap,
            topics=self.topics, remote_topic_prefix=self.policy.format_remote_topic(f.source, ""),
            restored_prefix=self.policy.format_remote_topic(f.target, "") if f.restore_history else "",
            history_ends=self.history.bounds() if f.restore_history else (), starting_offsets=self.starting_offsets,
            checkpoint_dir=self.checkpoint_dir, metrics_dir=self.metrics_dir, mode=f.mode,
            trigger_interval=f.effective_trigger_interval, max_offsets_per_trigger=f.max_offsets_per_trigger,
            use_provenance=f.replication_policy_class == "identity" and f.provenance_header,
            consumer=self.source_consumer_conf, producer=self.target_producer_conf,
            planted=self.data_fault if self.data_fault and self.data_fault.changes_records else None,
            transactional_ids=f.transactional_ids, commit_interval_ms=f.transaction_commit_interval_ms,
            trace_dir=self.metrics_dir if f.trace_records else None,
        )

    def _sync_topics(self) -> bool:
        """Create/grow remote topics; True when the set of replicated topics changed."""
        result = self.topic_sync.sync()
        topics = tuple(sorted(result.selected))
        grown = any(self.partitions.get(t, n) < n for t, n in result.partitions.items())
        self.partitions = result.partitions
        changed = topics != self.topics
        self.topics = topics
        self.status.topics = list(topics)
        return changed or grown

    def schedules(self) -> list[Every]:
        return [self.refresh, self.config_sync, self.heartbeat_every, self.checkpoint_every]

    def tick(self, spark: SparkSession, now: float) -> None:
        """Advance everything that is due; failures are logged and retried, never fatal."""
        query = self.query  # read once: the process's stop may clear it meanwhile (``close``)
        if query is not None and not query.isActive and not self.gate.closed:  # closed: stopped on purpose
            err = query.exception()
            self.status.query_failures += 1
            self.status.last_error = str(err)[:2000] if err else "stopped"
            log.warning("flow %s: query stopped (%s); re-syncing topics and restarting from its checkpoint",
                        self.name, (str(err) or "")[:500])
            self.query = None
            self._settle_before_start = True
            self._restart_after = now + 2.0
            self.refresh.now()
        if self.query is not None:
            self._guard("progress", self._record_progress)
            if not self.status.live:
                self._guard("liveness", lambda: self._check_live(spark))
        if self.refresh.due(now) or (self.query is None and now >= self._restart_after):
            self._guard("topic sync", lambda: self._refresh_and_start(spark, now))
        if self.config_sync.due(now) and self.topic_sync.config_filter is not None:
            self._guard("config sync", self.topic_sync.sync)
        if self.heartbeat_every.due(now):
            self._guard("heartbeat", self._heartbeat)
        if self.checkpoint_every.due(now) and self.topics:
            self._guard("checkpoints", self._checkpoint)

    def _refresh_and_start(self, spark: SparkSession, now: float) -> None:
        changed = self._sync_topics()
        with self.gate.change() as open_:
            if not open_:
                return
            if self.query is not None and changed:
                log.info("flow %s: topics now %s; restarting the query (its running batch is cancelled; "
                         "the new query starts after what reached the target)", self.name, list(self.topics))
                self.stop_query(spark)
            if self.query is None and self.topics and now >= self._restart_after:
                if self._warmed is None and self.flow.mode != "realtime":
                    # a micro-batch query may hold every task slot (local[tasks.max]): warm up first
                    self.warm_up_first(spark)
                self._start(spark)

    def prepare_start(self) -> None:
        """Before the Spark session exists, after the first topic sync: the first query's start offsets.

        Called beside the JVM's start (``FlowSupervisor._prepare_flows``; again if its topics change), so
        Kafka metadata and the resume reads cost no time of their own. Nothing of this process has
        written yet, so the positions cannot move before the query starts; ``_start`` uses them
        only if the topics and partitions are still the same by then."""
        if self.topics:
            self._prepared = (self.topics, dict(self.partitions), self._start_offsets())
            self.clock.mark("positions")

    def _start(self, spark: SparkSession) -> None:
        """Start the query right after the newest record this flow copied into each target partition.

        The target, not Spark's checkpoint, says where the copy stopped (see ``resume``): a
        killed process, a failed query and a query stopped for a new topic all leave records
        on the target past the checkpoint's last commit. So the old checkpoint is dropped and
        the new query starts from per-partition offsets. Positions are read only once the
        stopped query's writes have settled; any error reading them aborts this start (the
        next tick retries), never falls back to a guess that would copy twice or skip.
        """
        prepared, self._prepared = self._prepared, None
        ahead = prepared is not None and prepared[:2] == (self.topics, self.partitions) and not self._settle_before_start
        offsets = prepared[2] if ahead and prepared is not None else self._start_offsets()  # ahead implies prepared
        checkpoint_folder.fresh(self.checkpoint_dir)  # deletes only a query folder this replicator made
        self.query = start_query(spark, replace(self.plan(), starting_offsets=offsets))
        self._settle_before_start = True  # from now on, a stop leaves writes in flight
        self.status.query_starts += 1
        self.status.live = False
        self.clock.mark("first_query")
        log.info("flow %s: replicating %s (%s mode) from %s%s", self.name, list(self.topics), self.flow.mode, offsets,
                 " (positions read ahead)" if ahead else "")
        if self._warmed is None:  # real time: its slots have headroom for the warm-up's tasks
            self._warmed = warmed = threading.Event()
            if self._records_warm_up(warmed):
                return
            threading.Thread(target=self._warm_up, args=(spark, warmed), name=f"warm-up {self.name}", daemon=True).start()

    def warm_up_first(self, spark: SparkSession) -> None:
        """The warm-up before any query starts: in micro-batch mode, and in a standby driver (``standby``)."""
        self._warmed = warmed = threading.Event()
        if not self._records_warm_up(warmed):
            self._warm_up(spark, warmed)

    def _warm_up(self, spark: SparkSession, warmed: threading.Event) -> None:
        """Once per flow, beside its first query: Spark's first-batch cost, paid before the flow counts as live.

        The heartbeat round trip (the records that warm the JVM's per-record paths) runs once per
        process, by the flow whose first topic sync was quickest (``SharedWarmUp``)."""
        started = time.monotonic()
        # heartbeats carry the records that warm the JVM's paths
        round_trip = self.flow.emit_heartbeats_enabled and self.shared_warm_up.runs_round_trip(self.name)
        try:
            if round_trip:
                self.heartbeats.ensure_topic()
                steps = warm_up(spark, self.plan(), self.heartbeats.now, self.heartbeats.topic)
            else:
                steps = warm_up(spark, self.plan())
            owner = self.shared_warm_up.owner
            log.info("flow %s: Spark warmed up in %.1fs (%s)%s", self.name, time.monotonic() - started,
                     ", ".join(f"{what} {s:.1f}s" for what, s in steps.items()),
                     "" if round_trip or owner is None else f"; flow {owner} warms the JVM's per-record paths")
        except Exception as e:  # not retried: the query itself warms Spark up, only later
            log.warning("flow %s: warm-up failed after %.1fs (the first batch will be slow): %s",
                        self.name, time.monotonic() - started, str(e)[:500])
        finally:
            if round_trip:
                self.shared_warm_up.ended()
            warmed.set()

    def _records_warm_up(self, warmed: threading.Event) -> bool:
        """A restart with ``WARM_HEARTBEATS`` or more records waiting past what this flow copied: those records,
        not a warm-up batch, take Spark through its first-batch cost, and they move at once.

        The warm-up batch runs before the first query in micro-batch mode, so on a restart it held
        the waiting records back by seconds
        (see docs/measurements/behind-the-code.md#replicator-app-py). In real time it runs beside
        the query, and skipping it made no difference beyond the noise once the class-data archive
        held Kafka's classes. Nothing waits for readiness then; the waiting records are the load."""
        if self._waiting_at_start < WARM_HEARTBEATS:
            return False
        log.info("flow %s: %d records wait past what it copied before: they warm Spark up (no warm-up batch)",
                 self.name, self._waiting_at_start)
        if self.shared_warm_up.runs_round_trip(self.name):
            self.shared_warm_up.ended()  # they take the JVM's per-record paths hot, for every flow
        warmed.set()
        return True

    @property
    def warmed(self) -> bool:
        """Its warm-up ended, and so did the process's heartbeat round trip (run by this flow or another)."""
        return self._warmed is not None and self._warmed.is_set() and self.shared_warm_up.ready()

    def _start_offsets(self) -> str:
        """Spark's startingOffsets for the next query: right after this flow's newest copy in each partition."""
        offsets, self._waiting_at_start = self.start_reads.next_start(self.topics, self.partitions,
                                                                      self._settle_before_start)
        return offsets

    def _check_live(self, spark: SparkSession) -> None:
        """Live once the warm-up ended and, in real time, all the query's tasks run; a micro-batch query at once
        (its warm-up ran before it, and its batches are short)."""
        query = self.query
        if query is None or (self._warmed is not None and not self.warmed):
            return  # stopped since the tick looked, or still warming up
        live = self.flow.mode != "realtime" or query.lastProgress is not None or tasks_running(spark, query.runId)
        if live:
            self.status.live = True
            log.info("flow %s: query live", self.name)

    def _record_progress(self) -> None:
        self.status.record_batch(q.lastProgress if (q := self.query) is not None else None)  # read once: may stop

    def _heartbeat(self) -> None:
        self.heartbeats.emit()
        self.status.heartbeats += 1

    def _checkpoint(self) -> None:
        self.status.checkpoints += len(self.checkpoints.emit())

    def _guard(self, what: str, fn: Callable[[], object]) -> None:
        try:
            fn()
        except Exception as e:  # a WAN partition or a dead cluster must not stop the replicator
            log.warning("flow %s: %s failed: %s", self.name, what, e)
            self.status.last_error = f"{what}: {e}"[:2000]

    def stop_query(self, spark: SparkSession | None = None) -> None:
        """Stop the query on purpose: quietly when the session is at hand (``spark_stream.stop_query``)."""
        if self.query is not None:
            try:
                if spark is not None:
                    stop_query(spark, self.query, self.quiet_stops)
                else:
                    self.query.stop()
            except Exception as e:
                log.warning("flow %s: stopping the query: %s", self.name, e)
            self.query = None

    # --- lag --------------------------------------------------------------------------
    def lag(self) -> dict[tuple[str, int], int]:
        """Per remote partition: source end minus (last copied source offset + 1); from the lag thread only, own clients."""
        return self.lag_reads.measure(self.partitions)

    def close(self, spark: SparkSession | None = None, clients: bool = True) -> None:
        # clients=False: a pass may be inside one, waiting on a dead cluster (unsafe to close under it)
        with self.gate.closing():  # after a query start or stop under way
            self.stop_query(spark)
        self.target_producer.flush(5)
        if clients:
            self.index.close()
            for reads in (self.lag_reads, self.source_reads, self.start_reads):
                reads.close()
