"""A driver started as its node's standby: warmed up, then waiting for the node's lease (``lease``).

Everything a query start costs that can be paid ahead is paid while waiting: the JVM, the Spark
session, each flow's warm-up batch (its heartbeats go to the target's heartbeats topic, as an
active driver's do), and, once another driver is seen holding the lease, a rehearsal of each
flow's query (``rehearse``). What cannot be paid ahead is read once the lease is taken: the fence
of the flows' transactional writers, then the positions to resume from (``FlowRuntime._start``),
since whatever the old holder wrote up to its fence counts.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from mirrordrill.replicator import checkpoint_folder
from mirrordrill.replicator.app import FlowRuntime, librdkafka_conf
from mirrordrill.replicator.config.settings import ReplicatorConfig
from mirrordrill.replicator.driver_jvm import collect_start_up_garbage
from mirrordrill.replicator.lease import Lease, LocalLock
from mirrordrill.replicator.planted_faults import StandbyFault
from mirrordrill.replicator.spark_stream import start_rehearsal, stop_query, tasks_running

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("replicator")

REHEARSAL_START_LIMIT_S = 15.0  # a rehearsal whose tasks have not all started by then (a source out of reach) is stopped as it is
# once its tasks run: records of a flow under load go through the transform in this time
REHEARSAL_DWELL_S = 1.0


def lease_for(config: ReplicatorConfig) -> Lease | None:
    """The node's lease when the configuration names one (on the first enabled flow's target), else None."""
    if config.lease_group is None:
        return None
    flow = config.enabled_flows()[0]
    lock = LocalLock(Path(config.lease_lock_file)) if config.lease_lock_file else None
    fault = StandbyFault.from_env(os.environ)  # the mutation suite's only
    return Lease(librdkafka_conf(config.client_config(flow, "target_admin")), config.lease_group, lock,
                 config.lease_session_timeout_ms, first_only=fault is not None and fault.never_takes_over)


def stand_by(flows: list[FlowRuntime], spark: SparkSession, lease: Lease, stop: threading.Event,
             waiting: Callable[[], None]) -> bool:
    """Warm every flow up, then wait for the lease (``waiting`` runs between looks); False when stopped first."""
    for fr in flows:
        if fr.topics:
            fr.warm_up_first(spark)
    log.info("standing by: warmed up (start-up's garbage collected in %.2fs); waiting for the lease %s",
             collect_start_up_garbage(spark), lease.group)
    began = time.monotonic()
    rehearsed = False

    def idle() -> None:
        nonlocal rehearsed
        # only behind a holder: at the node's first start the driver that takes the lease is not held back
        if not rehearsed and lease.held_elsewhere:
            rehearsed = True
            for fr in flows:
                if fr.topics and not stop.is_set():
                    rehearse(fr, spark, stop)
            log.info("the rehearsal's garbage collected in %.2fs", collect_start_up_garbage(spark))
        waiting()
    why = lease.acquire(stop, idle=idle)
    if why is None:
        return False
    log.info("took the lease %s after %.1fs standing by: %s", lease.group, time.monotonic() - began, why)
    return True


def rehearse(fr: FlowRuntime, spark: SparkSession, stop: threading.Event) -> None:
    """Run the flow's query once into a writer that writes nothing (``spark_stream.start_rehearsal``), then stop it.

    A query pays, the first time in a JVM, for what no warm-up batch touches: the streaming plan's
    analysis and planning, its tasks' serialisation, the transform's generated code in a streaming
    task, the Kafka clients' classes on the executors. Paid after the lease, that was most of a
    takeover's query start (a flight recording of one showed the query's thread and its tasks in
    first-time work for about a second). The lease is not watched while this runs (a few seconds,
    once per standby): a holder lost meanwhile is taken over when it ends. A failure is logged,
    not raised: the takeover then pays these costs itself."""
    began = time.monotonic()
    try:
        checkpoint_folder.fresh(fr.checkpoint_dir)  # deletes only a query folder this replicator made
        query = start_rehearsal(spark, fr.plan())
        try:
            deadline = began + REHEARSAL_START_LIMIT_S
            # running: a real-time query's tasks all started, a micro-batch query's first batch done
            while time.monotonic() < deadline and query.isActive and query.lastProgress is None:
                if tasks_running(spark, query.runId) or stop.wait(0.1):
                    break
            stop.wait(REHEARSAL_DWELL_S)
        finally:
            stop_query(spark, query, fr.quiet_stops)
        log.info("flow %s: rehearsed its query in %.1fs (it wrote nothing)", fr.name, time.monotonic() - began)
    except Exception as e:  # the takeover still works, only slower
        log.warning("flow %s: query rehearsal failed after %.1fs (the takeover will start slower): %s",
                    fr.name, time.monotonic() - began, str(e)[:500])
