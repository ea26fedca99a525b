"""How long a replicator start takes until the first record moves, and where the time went.

Measured from the process's own start (the kernel's record of it, so interpreter start-up and
imports count too), in phases a person can act on: the driver JVM up (Spark's launcher and the
py4j gateway), the Spark session (SparkContext: jars, scheduler, executors), the resume
positions read (Kafka metadata and the target's newest copies; read while the JVM starts, so
this phase usually ends before the session), the warm-up batch (in real time beside the first
query, in micro-batch mode before it), the first query start, the query live (real time: warm-up
done and its tasks all running; micro-batch: at its start), both when every flow of the process
got there (the replicator counts as ready from then on), and the first record the producer
interceptor reports as written. The interceptor writes its counts at once when a target
partition gets its first record (and every second after), so the last figure is good to the
status loop's quarter second.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import asdict, dataclass, field
from typing import Any

log = logging.getLogger("replicator")


def process_started_at() -> float:
    """Wall-clock time the current process started (Linux /proc, to the clock tick); now when unknown.

    The kernel records a process's start in ticks of the boot clock. ``btime`` in /proc/stat is
    the boot's wall-clock time in whole seconds, which put every start up to a second too early
    (every start-up figure read that much slow;
    see docs/measurements/behind-the-code.md#replicator-startup-py); the boot clock read now against the wall
    clock read now is exact.
    """
    try:
        with open("/proc/self/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        booted_at = time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)
        return booted_at + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return time.time()


@dataclass
class StartupClock:
    """Seconds from process start to each phase's end (None: not reached yet)."""

    started_at_ms: int = field(default_factory=lambda: int(process_started_at() * 1000))
    jvm_s: float | None = None
    spark_session_s: float | None = None
    positions_s: float | None = None
    warm_up_s: float | None = None
    first_query_s: float | None = None
    query_live_s: float | None = None
    first_record_s: float | None = None
    _baseline: int | None = field(default=None, repr=False)

    def _since_start(self) -> float:
        return round(time.time() - self.started_at_ms / 1000, 2)

    def mark(self, phase: str) -> None:
        """Record ``phase`` (jvm, spark_session, positions, first_query, query_live) once, the first time it ends."""
        if getattr(self, f"{phase}_s") is None:
            setattr(self, f"{phase}_s", self._since_start())

    def observe_records(self, written: int) -> None:
        """Feed the total records written so far (files of earlier processes included)."""
        if self._baseline is None:
            self._baseline = written  # what earlier processes of this workdir wrote
        elif self.first_record_s is None and written > self._baseline:
            self.first_record_s = self._since_start()
            log.info("first record moved %.1fs after the process started (JVM up at %s s, Spark session ready at "
                     "%s s, resume positions read at %s s, first query started at %s s, live at %s s)",
                     self.first_record_s, self.jvm_s, self.spark_session_s, self.positions_s,
                     self.first_query_s, self.query_live_s)

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if not k.startswith("_")}
