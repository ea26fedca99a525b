"""A driver started as its node's standby: warmed up, then waiting for the node's lease (``lease``).

Everything a query start costs that can be paid ahead is paid while waiting: the JVM, the Spark
session, each flow's warm-up batch (its heartbeats go to the target's heartbeats topic, as an
active driver's do). What cannot be paid ahead is read once the lease is taken: the fence of the
flows' transactional writers, then the positions to resume from (``FlowRuntime._start``), since
whatever the old holder wrote up to its fence counts.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from mirrordrill.replicator.app import FlowRuntime, librdkafka_conf
from mirrordrill.replicator.config.settings import ReplicatorConfig
from mirrordrill.replicator.lease import Lease, LocalLock
from mirrordrill.replicator.planted_faults import StandbyFault

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("replicator")


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
    log.info("standing by: warmed up; waiting for the lease %s", lease.group)
    began = time.monotonic()
    why = lease.acquire(stop, idle=waiting)
    if why is None:
        return False
    log.info("took the lease %s after %.1fs standing by: %s", lease.group, time.monotonic() - began, why)
    return True
