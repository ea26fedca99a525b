"""The replicator process: the driver JVM and its Spark session, every enabled flow, and the status file.

The process starts the driver JVM on a thread of its own from its first moment, syncs each flow's
topics and reads its resume positions beside it (``_prepare_flows``), then runs each flow's
control plane (``FlowRuntime.tick``, on ``control_threads``) until told to stop, writing its status
(metrics, start-up phases, Prometheus text) as it goes. Everything per flow is in ``app``.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mirrordrill.replicator import checkpoint_folder
from mirrordrill.replicator.app import QUERY_DIR, FlowRuntime, checkpoint_base
from mirrordrill.replicator.config.settings import ReplicatorConfig
from mirrordrill.replicator.control_threads import ControlThreads
from mirrordrill.replicator.driver_jvm import (
    DriverStart,
    collect_start_up_garbage,
    driver_jit_for,
    driver_jvm_flags,
    is_local,
    jit_flags,
    session_settings,
)
from mirrordrill.replicator.metrics import as_document, read_interceptor_files, write_json_atomically
from mirrordrill.replicator.planted_faults import StandbyFault
from mirrordrill.replicator.prometheus import MetricsServer, render
from mirrordrill.replicator.shared_warm_up import SharedWarmUp
from mirrordrill.replicator.spark_stream import QuietStops, sink_producer_config
from mirrordrill.replicator.standby import lease_for, stand_by
from mirrordrill.replicator.startup import StartupClock
from mirrordrill.replicator.task_slots import capped_slots_note, spark_master_for

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("replicator")


class FlowSupervisor:
    """Runs every enabled flow of a configuration until ``stop`` is set."""

    def __init__(self, config: ReplicatorConfig, workdir: Path, jars: list[Path], status_file: Path | None = None):
        self.config = config
        self.workdir = Path(workdir)
        self.jars = jars
        self.status_file = status_file or self.workdir / "metrics.json"
        self.flows: list[FlowRuntime] = []
        self.spark: SparkSession | None = None
        self.clock = StartupClock()
        self.prometheus: MetricsServer | None = None
        self.lease = lease_for(config)  # a driver with a standby: replicates only while it holds it

    def _prepare_flows(self, session_ready: threading.Event) -> None:
        """Each flow's first start offsets (``FlowRuntime.prepare_start``), its topics synced every 0.5 s
        until the session is ready.

        In a chain the next hop's topics appear a second into the start, made by the process
        upstream: synced only after the session, relay->core's first query started later after it
        than edge->relay's, which had its topics at its first sync
        (see docs/measurements/behind-the-code.md#replicator-process-py)."""
        if self.lease is not None:  # read once the lease is taken, after the fence (``standby``)
            session_ready.wait()
            return
        prepared: set[str] = set()
        synced = True  # FlowSupervisor.run synced every flow just before
        while True:
            for fr in self.flows:
                try:
                    if not synced and fr._sync_topics():
                        prepared.discard(fr.name)  # a topic appeared: its positions are read again
                    if fr.topics and fr.name not in prepared:
                        fr.prepare_start()
                        prepared.add(fr.name)
                        log.info("flow %s: resume positions read ahead for %s", fr.name, list(fr.topics))
                except Exception as e:  # e.g. a remote topic created a moment ago has no leader yet
                    log.info("flow %s: reading resume positions ahead: %s (again in 0.5 s)", fr.name, e)
            synced = False
            if session_ready.wait(0.5):
                return

    def _begin_driver(self) -> DriverStart:
        """The driver JVM's start, on its own thread from the process's start (``driver_jvm.DriverStart``)."""
        # Spark binds to the host's first interface by default; drills live on loopback.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        tmp = self.workdir / "spark-tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        master = self.config.spark_master.strip()
        launch_master = "local[*]" if is_local(master) else master
        log.info("starting the driver JVM")
        jit = driver_jit_for(self.config.driver_jit, [f.mode for f in self.config.enabled_flows()])
        log.info("driver JIT: %s%s", jit, "" if self.config.driver_jit else " (by the flows' mode)")
        flags = [*jit_flags(jit), *driver_jvm_flags()]
        return DriverStart(session_settings(self.jars, tmp, flags, master), launch_master,
                           lambda: self.clock.mark("jvm")).begin()

    def _start_spark(self, driver: DriverStart) -> SparkSession:
        # headroom so topics created later still find task slots, and two slots no real-time task
        # can hold for the warm-up's batch jobs (a chain's relay->core flow started with no
        # partition, then got 4: its real-time tasks held all of local[4] and the warm-up, so the
        # flow, never ran)
        realtime_partitions = sum(max(4, 2 * sum(fr.partitions.values())) + 2 for fr in self.flows
                                  if fr.flow.mode == "realtime")
        master = spark_master_for(self.config, realtime_partitions)
        log.info("starting Spark (%s)%s", master, capped_slots_note(self.config))
        spark = driver.session(master)
        spark.sparkContext.setLogLevel(os.environ.get("MIRRORDRILL_SPARK_LOG_LEVEL", "WARN"))
        return spark

    def run(self, stop: threading.Event) -> None:
        """Replicate until ``stop`` is set; stops queries and Spark on the way out."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        flows = self.config.enabled_flows()
        if (fault := StandbyFault.from_env(os.environ)) is not None:  # the mutation suite's only
            flows = [f.model_copy(update={"transactional_id_prefix": fault.id_prefix(f.transactional_id_prefix,
                                                                                     str(os.getpid()))}) for f in flows]
        if not flows:
            raise ValueError("no enabled flow in the configuration (set A->B.enabled = true)")
        for f in flows:  # before anything starts: each query start empties its folder
            checkpoint_folder.check(checkpoint_base(self.config, f, self.workdir) / QUERY_DIR)
        if self.config.metrics_port is not None:  # first: a taken port fails the start before anything opens
            self.prometheus = MetricsServer(self.config.metrics_port).start()
        driver: DriverStart | None = None
        clients_idle = True  # no control pass is inside a Kafka client (none started, or all ended)
        try:
            driver = self._begin_driver()
            quiet_stops = QuietStops()
            self.flows = [FlowRuntime(self.config, f, self.workdir, self.clock, quiet_stops) for f in flows]
            self.clock.observe_records(self._records_written())  # what earlier processes wrote
            synced: dict[str, float] = {}  # how long each first sync took: how quick the flow's links are
            for fr in self.flows:  # sizes the real-time task slots of the Spark master
                began = time.monotonic()
                fr._guard("first topic sync", fr._sync_topics)
                if fr.topics and fr.flow.emit_heartbeats_enabled:
                    synced[fr.name] = time.monotonic() - began
                if fr.flow.emit_heartbeats_enabled and self.lease is None:  # a standby writes nothing yet
                    # before the JVM, not after: where two replicators copy each other's clusters (active/
                    # active, a chain), each one's first query then finds the other's heartbeats topic
                    # instead of restarting for it a few seconds later, in the middle of its warm-up
                    fr._guard("first heartbeat", fr._heartbeat)
            shared_warm_up = SharedWarmUp.quickest(synced)
            for fr in self.flows:
                fr.shared_warm_up = shared_warm_up
            # the resume reads run beside the JVM's start, which leaves a core idle for most of it
            session_ready = threading.Event()
            positions = threading.Thread(target=self._prepare_flows, args=(session_ready,), name="resume-positions",
                                         daemon=True)
            positions.start()
            try:
                self.spark = self._start_spark(driver)
            finally:
                session_ready.set()
                positions.join()
            self.clock.mark("spark_session")
            log.info("Spark session ready %.1fs after the process started", self.clock.spark_session_s)
            for fr in self.flows:  # every later query start fences through the JVM's Kafka client
                fr.start_reads.fence_through_jvm(self.spark, sink_producer_config(fr.plan()))
            if self.lease is not None and not stand_by(self.flows, self.spark, self.lease, stop,
                                                       lambda: self._write_status({})):
                return
            control = ControlThreads(self.flows, self.spark, self._longest_wait_s).start()
            try:
                while not stop.is_set() and not control.failed and not (self.lease and self.lease.lost.is_set()):
                    self._mark_ready_phases()
                    self._write_status(control.lag)
                    stop.wait(self._longest_wait_s())
            finally:
                clients_idle = control.stop()
            if control.failure is not None:
                raise control.failure
            if self.lease is not None:
                self.lease.check()
        finally:
            try:
                # every query stops (and its cancelled tasks settle) before the session does
                for fr in self.flows:
                    fr.close(self.spark, clients=clients_idle)
                if self.spark is not None:
                    self.spark.stop()
                elif driver is not None:
                    driver.abandon()
                self._write_status({})
            finally:
                if self.lease is not None:
                    self.lease.close()
                if self.prometheus is not None:
                    self.prometheus.stop()

    def _longest_wait_s(self) -> float:
        # a finer clock until the first record moves: the harness waits for the status written at
        # readiness, and start-up time is measured closely
        return 1.0 if self.clock.first_record_s is not None else 0.25

    def _mark_ready_phases(self) -> None:
        """Warm-up done and query live once every flow with topics got there: the process is ready only then
        (the harness waits for all its flows), so the first flow's time would flatter a process of several."""
        flows = [fr for fr in self.flows if fr.topics]
        if flows and all(fr.warmed for fr in flows):
            self.clock.mark("warm_up")
        if flows and all(fr.status.live for fr in flows) and self.clock.query_live_s is None:
            if self.lease is None and self.spark is not None:  # a standby collected before standing by
                log.info("start-up's garbage collected in %.2fs", collect_start_up_garbage(self.spark))
            self.clock.mark("query_live")

    def _records_written(self) -> int:
        return sum(m.records for fr in self.flows
                   for m in read_interceptor_files(fr.metrics_dir, fr.metrics.ignored_topics).values())

    def _write_status(self, lag: dict[str, dict[tuple[str, int], int]]) -> None:
        flows = {fr.name: fr.metrics.sample(lag.get(fr.name)) for fr in self.flows}
        self.clock.observe_records(sum(m.records for ms in flows.values() for m in ms))
        status = {fr.name: vars(fr.status) for fr in self.flows}
        startup = self.clock.as_dict()
        extra: dict[str, Any] = {"status": status, "startup": startup}
        if self.lease is not None:
            extra["role"] = "lost" if self.lease.lost.is_set() else "active" if self.lease.joined else "standby"
        if self.prometheus is not None:
            self.prometheus.text = render(flows, status, startup)
            extra["prometheus_url"] = self.prometheus.url
        write_json_atomically(self.status_file, as_document(flows, extra))
