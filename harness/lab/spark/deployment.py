"""Where the PySpark replicator's Spark runs: in its own process, on a standalone cluster we start, or at a URL.

``local`` is today's default (``local[N]`` inside the replicator's process). ``standalone``
starts a Spark standalone master and workers from the pyspark install (``harness.lab.spark.standalone``)
and submits the replicator to it. A ``spark://`` URL submits to a cluster someone else runs;
``yarn`` and ``k8s://`` are handed to spark-submit as they are and are untested here (their
executors must reach the brokers, so they pair with drills on existing clusters).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mirrordrill.primitives.jvm_jit import JIT_MODES

LOCAL = "local"
STANDALONE = "standalone"
_LOCAL_N = re.compile(r"^local(\[(\*|\d+)(,\d+)?\])?$")
_SPARK_URL = re.compile(r"^spark://[^/\s:]+:\d+(,[^/\s:]+:\d+)*$")
_MEMORY = re.compile(r"^\d+[kmgt]?$", re.IGNORECASE)
VALID = "local (default), local[N], standalone, spark://HOST:PORT, yarn or k8s://https://HOST:PORT"


DRIVER_JITS = JIT_MODES  # the replicator's mirrordrill.driver.jit values


class SparkDeploymentError(ValueError):
    """A Spark master or executor setting that cannot work; the message names the valid forms."""


@dataclass(frozen=True)
class SparkDeployment:
    """The replicator's Spark master and, when submitted to a cluster, its executors."""

    master: str = LOCAL
    executors: int = 2
    executor_cores: int = 2
    executor_memory: str = "768m"
    # the driver JVM's JIT (replicator.driver_jvm.jit_flags): None leaves the replicator's default
    driver_jit: str | None = None

    def __post_init__(self) -> None:
        m = self.master.strip()
        if not (_LOCAL_N.match(m) or m in (STANDALONE, "yarn") or _SPARK_URL.match(m) or m.startswith("k8s://")):
            raise SparkDeploymentError(f"Spark master {self.master!r} is not one of: {VALID}")
        if self.executors < 1 or self.executor_cores < 1:
            raise SparkDeploymentError(f"executors ({self.executors}) and executor_cores ({self.executor_cores}) "
                                       "must be at least 1")
        if not _MEMORY.match(self.executor_memory):
            raise SparkDeploymentError(f"executor_memory {self.executor_memory!r} is not a JVM size such as 768m or 2g")
        if self.driver_jit not in (None, *DRIVER_JITS):
            raise SparkDeploymentError(f"driver_jit {self.driver_jit!r} is not one of: {', '.join(DRIVER_JITS)}")

    @property
    def submitted(self) -> bool:
        """True when the replicator goes to a cluster through spark-submit, not ``local[N]`` in its process."""
        return not _LOCAL_N.match(self.master.strip())

    @property
    def slots(self) -> int:
        """Task slots the replicator asks the cluster for."""
        return self.executors * self.executor_cores

    def local_master(self) -> str | None:
        """The replicator's own ``mirrordrill.spark.master`` when it runs Spark in its process (``None``: its default)."""
        m = self.master.strip()
        return None if m == LOCAL or self.submitted else m

    def describe_executors(self) -> str:
        return f"{self.executors} x {self.executor_cores} cores, {self.executor_memory}" if self.submitted else "in-process"


def check_task_slots(status: dict, needed: int, asked: int, what: str) -> None:
    """Refuse a real-time flow that cannot get one task slot per partition.

    ``status`` is the standalone master's ``/json/`` document. Real-time tasks run for as long
    as the query does, so a partition without a slot is never read: the drill would measure a
    stall, not the replicator. ``asked`` is what the replicator requests (executors x cores).
    """
    if needed <= 0:
        return
    free = sum(w.get("coresfree", w.get("cores", 0) - w.get("coresused", 0))
               for w in status.get("workers", []) if w.get("state") == "ALIVE")
    if asked < needed:
        raise SparkDeploymentError(
            f"{what} needs {needed} task slots (one per partition in real-time mode) but the replicator asks "
            f"for {asked} (executors x executor_cores); raise replication.spark.executors or executor_cores "
            f"to at least {needed} slots, or use mode: microbatch")
    if free < needed:
        raise SparkDeploymentError(
            f"{what} needs {needed} task slots (one per partition in real-time mode) but the Spark master "
            f"{status.get('url', '?')} has {free} free cores on {status.get('aliveworkers', 0)} alive worker(s); "
            f"add workers or cores, or use mode: microbatch")
