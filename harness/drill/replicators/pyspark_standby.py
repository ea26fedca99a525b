"""``replication.standby``: each of the bundled replicator's processes runs as two drivers, an active one and
a warmed standby, sharing the node's lease (``replicator.lease``).

The harness plays the part a process supervisor (systemd, Kubernetes) plays in production: a
driver killed, or one that stopped because its lease was taken while it was paused, is started
again and comes back as the standby. The node's faults (``*_replicator_node``) act on the driver
that holds the lease; its status file is the node's.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from mirrordrill.harness.drill.replicators.errors import ReplicatorError
from mirrordrill.harness.drill.replicators.processes import NodeReplicator, NodeT, ProcessNode
from mirrordrill.harness.lab.spark.standalone import StandaloneSpec
from mirrordrill.primitives.process import ManagedProcess
from mirrordrill.replicator.__main__ import LEASE_LOST_EXIT

# the standby's work folder, beside the active's ("work"): status, metrics, Spark's scratch
STANDBY_WORK = "work-b"
SECOND_LOG = "replicator-b.log"
LOCK_FILE = "lease.lock"
# how long a resumed driver must go on saying "active" to count as having kept its lease: a few of
# its lease's heartbeats (replicator.lease.HEARTBEAT_INTERVAL_MS), each of which would learn it lost it
KEEP_CHECK_S = 3.0
# how long a restarted driver may take to stand by again: a JVM, a Spark session and the warm-up,
# and on a standalone master its executors' JVMs too (about 25 s on this 2-core machine)
STANDBY_BACK_TIMEOUT_S = 180.0


def lease_settings(owned_prefix: str, location: str, node_dir: Path | None) -> dict[str, str]:
    """The process-wide keys that make a node's two drivers share one lease, and the node's lock file in
    ``node_dir`` (None: the lease alone, as two drivers on different machines have it)."""
    lock = {"mirrordrill.lease.lock.file": str(node_dir / LOCK_FILE)} if node_dir is not None else {}
    return {"mirrordrill.lease.group": f"{owned_prefix}lease.{location}"} | lock


def transactional_settings(owned_prefix: str) -> dict[str, str]:
    """The flow keys a standby needs: its takeover fences the writers it replaces (``replicator.transactions``)."""
    return {"mirrordrill.transactional": "true", "mirrordrill.transactional.id.prefix": owned_prefix}


def _status(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


@dataclass
class DriverPair:
    """One node's two drivers: ``first`` (the harness's usual process, work folder ``work``) and ``second``."""

    first: ManagedProcess
    second: ManagedProcess
    first_status: Path
    second_status: Path

    @property
    def processes(self) -> tuple[ManagedProcess, ManagedProcess]:
        return self.first, self.second

    def path_of(self, proc: ManagedProcess) -> Path:
        return self.first_status if proc is self.first else self.second_status

    def status_path(self) -> Path:
        """The status of the driver holding the lease: the newest saying "active" (the first's before either does)."""
        active = [(doc.get("written_ms", 0), path) for path in (self.first_status, self.second_status)
                  if (doc := _status(path)).get("role") == "active"]
        return max(active)[1] if active else self.first_status

    def active(self) -> ManagedProcess:
        """The driver whose status says it holds the lease (the first before either does)."""
        return self.first if self.status_path() == self.first_status else self.second

    def other(self, proc: ManagedProcess) -> ManagedProcess:
        return self.second if proc is self.first else self.first

    def standing_by(self) -> bool:
        """The driver not holding the lease runs and is warmed up, waiting for it."""
        other = self.other(self.active())
        return other.running and _status(self.path_of(other)).get("role") == "standby"

    def paused(self) -> ManagedProcess | None:
        return next((p for p in self.processes if p.paused), None)

    def replace_killed(self, killed: ManagedProcess, timeout_s: float) -> str:
        """After a kill: once the other driver took the lease and copies, start the killed one again, and
        return once it stands by: the node is whole again, as a node step leaves it.

        Not at the takeover itself: on one shared machine the restart (a JVM, and on a standalone
        master its two executors' too) took the cores the new active needed for its first records."""
        took = self._wait(lambda: self.active() is not killed and self.active().running, timeout_s)
        moving = took and self._wait(self._active_copies, timeout_s)
        killed.start()
        said = (f"{self.active().name} took over" + ("" if moving else f", no record copied within {timeout_s:.0f}s")
                if took else f"no takeover within {timeout_s:.0f}s")
        return f"{said}; {self._back_as_standby(killed)}"

    def _back_as_standby(self, restarted: ManagedProcess) -> str:
        """Wait until ``restarted`` (just started again) stands by; say how long that took."""
        began = time.monotonic()
        if self._wait(lambda: self.standing_by() or not restarted.running, STANDBY_BACK_TIMEOUT_S) \
                and self.standing_by():
            return f"{restarted.name} started again and stands by after {time.monotonic() - began:.1f}s"
        return f"{restarted.name} started again but did not stand by within {STANDBY_BACK_TIMEOUT_S:.0f}s"

    def _active_copies(self) -> bool:
        """The active driver has moved a record (its status's start-up figures say when it first did)."""
        return (_status(self.status_path()).get("startup") or {}).get("first_record_s") is not None

    def after_resume(self, resumed: ManagedProcess, timeout_s: float) -> str:
        """After a pause: a driver whose lease was taken meanwhile stops (exit ``LEASE_LOST_EXIT``): start it again.

        One that kept its lease (a pause shorter than the lease's session) still says "active" once
        ``KEEP_CHECK_S`` passed, time for its lease's heartbeats to learn otherwise."""
        resumed_at = time.monotonic()

        def settled() -> bool:
            return not resumed.running or (time.monotonic() - resumed_at >= KEEP_CHECK_S and self.active() is resumed)
        if not self._wait(settled, timeout_s):
            return f"{resumed.name} neither kept its lease nor stopped within {timeout_s:.0f}s"
        if resumed.running:
            return f"{resumed.name} still holds the lease"
        code = resumed.returncode
        resumed.start()
        why = "its lease was taken while it was paused" if code == LEASE_LOST_EXIT else f"exit code {code}"
        return f"{resumed.name} stopped ({why}); {self._back_as_standby(resumed)}"

    @staticmethod
    def _wait(done: Callable[[], bool], timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while not done():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.2)
        return True


def driver_pair(second: ManagedProcess, node: ProcessNode) -> DriverPair:
    """A node's second driver (the same configuration, work folder ``STANDBY_WORK``) beside its usual process."""
    if node.process is None:
        raise ReplicatorError(f"{node.name}: a standby needs the node's own driver first")
    return DriverPair(node.process, second, node.workdir / "work" / "metrics.json",
                      node.workdir / STANDBY_WORK / "metrics.json")


def standby_spec() -> StandaloneSpec:
    """The standalone cluster this machine starts for drivers with standbys: each standby's application
    holds executors as large as its active's, so each worker offers twice the usual 2 cores and 2 GB."""
    return StandaloneSpec(worker_cores=4, worker_memory="4g")


class StandbyNodes(NodeReplicator[NodeT]):
    """A node replicator whose nodes may run a driver pair (``_pairs``, by node name; empty without standby):
    node faults act on the driver holding the lease, and a driver that stopped is started again."""

    _pairs: dict[str, DriverPair]
    # how long a node step waits for the takeover (or the stop of a driver whose lease was taken)
    takeover_timeout_s: ClassVar[float] = 60.0

    @property
    def processes(self) -> list[ManagedProcess]:
        return [*super().processes, *(pair.second for pair in self._pairs.values())]

    def drivers_of(self, node: ProcessNode) -> list[tuple[ManagedProcess, str]]:
        """The node's driver processes with their work folders: its own, and a standby's second one."""
        assert node.process is not None  # made with the node
        pair = self._pairs.get(node.name)
        return [(node.process, "work")] + ([(pair.second, STANDBY_WORK)] if pair is not None else [])

    def _pair(self, index: int) -> DriverPair | None:
        return self._pairs.get(self.node(index).name)

    def _process_of(self, index: int) -> ManagedProcess:
        pair = self._pair(index)
        return pair.active() if pair is not None else super()._process_of(index)

    def kill_node(self, index: int) -> str:
        pair, killed = self._pair(index), self._process_of(index)
        said = super().kill_node(index)
        return said if pair is None else f"{said}; {pair.replace_killed(killed, self.takeover_timeout_s)}"

    def resume_node(self, index: int) -> str:
        pair = self._pair(index)
        if pair is None:
            return super().resume_node(index)
        resumed = pair.paused() or pair.active()
        resumed.resume()
        return f"resumed {resumed.name} (SIGCONT); {pair.after_resume(resumed, self.takeover_timeout_s)}"
