"""The replicator's control-plane threads: one per flow, and one for the lag probe.

A flow's control plane talks to its clusters across the WAN: a topic refresh, a config sync, a
checkpoint pass are each one admin or consumer round trip or more. With one loop for every flow,
a far flow's round trips held up all the others. In fan-out (three flows in one process,
region3 behind the slowest link), one pass over the flows and the lag probe took seconds
(see docs/measurements/behind-the-code.md#replicator-control-threads-py): a flow counted as
live up to 2 s after its warm-up ended, the status the
harness waits for was written that much later, and every flow's checkpoints waited behind the
far one's. MM2 gives each connector's tasks threads of their own; so does this.

Each flow's ``tick`` runs on its flow's thread only, and its lag probe on the lag thread only,
with clients of its own (``FlowRuntime.lag``). The process's main thread writes the status.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Protocol

from mirrordrill.replicator.schedule import Every, wait_until_due

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("replicator")

LAG_PROBE_INTERVAL_S = 2.0
# How long the process's stop waits for the control passes under way to end on their own (``stop``).
PASS_GRACE_S = 2.0


class ControlledFlow(Protocol):
    """What the threads need of a flow (``app.FlowRuntime``)."""

    name: str

    def tick(self, spark: SparkSession, now: float) -> None: ...

    def schedules(self) -> list[Every]: ...

    def lag(self) -> dict[tuple[str, int], int]: ...


class ControlThreads:
    """Runs every flow's control loop and the lag probe until ``stop``; the first unexpected error ends them all."""

    def __init__(self, flows: Sequence[ControlledFlow], spark: SparkSession, longest_wait_s: Callable[[], float]):
        self.flows = flows
        self.spark = spark
        self.longest_wait_s = longest_wait_s  # how long a loop may sleep when nothing is due
        self.lag: dict[str, dict[tuple[str, int], int]] = {}  # flow name -> its latest lag probe (replaced whole, never mutated)
        self.failure: BaseException | None = None
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> ControlThreads:
        for fr in self.flows:
            self._spawn(f"control {fr.name}", partial(self._flow_loop, fr))
        self._spawn("lag probe", self._lag_loop)
        return self

    @property
    def failed(self) -> bool:
        return self.failure is not None

    def stop(self, grace_s: float = PASS_GRACE_S) -> bool:
        """Ask every loop to end after its current pass; True when all ended within ``grace_s``.

        A pass starting or stopping a query is waited for by its flow's gate (``FlowRuntime.close``),
        however long it takes; any other part of a pass is a round trip, which against an unreachable
        cluster blocks for its whole timeout and need not end before the process does."""
        self._stop.set()
        deadline = time.monotonic() + grace_s
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        busy = [t.name for t in self._threads if t.is_alive()]
        if busy:
            log.info("%s still waiting on a cluster after %.0fs; the process stops without it", ", ".join(busy), grace_s)
        return not busy

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        def guarded() -> None:
            try:
                target()
            except BaseException as e:  # tick guards every step: this is a bug, and it ends the process
                log.exception("%s failed", name)
                self.failure = self.failure or e
                self._stop.set()
        thread = threading.Thread(target=guarded, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _flow_loop(self, fr: ControlledFlow) -> None:
        while not self._stop.is_set():
            fr.tick(self.spark, time.monotonic())
            # awake when a schedule is due, so checkpoints keep their interval to the ms
            self._stop.wait(wait_until_due(fr.schedules(), time.monotonic(), self.longest_wait_s()))

    def _lag_loop(self) -> None:
        while not self._stop.is_set():
            for fr in self.flows:
                try:
                    self.lag = self.lag | {fr.name: fr.lag()}
                except Exception as e:
                    log.debug("flow %s: lag probe failed: %s", fr.name, e)
            self._stop.wait(LAG_PROBE_INTERVAL_S)
