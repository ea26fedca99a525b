"""The replicator interface the scenario engine drives, whatever the replicator is.

A drill describes *what* to replicate once (``ReplicationSetup``); an adapter (``ReplicatorAdapter``)
decides *how* — our PySpark replicator, Apache MirrorMaker 2, or a user's own command — and
exposes the same lifecycle (start, stop, kill, pause, restart), measurements and offset
translation.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from mirrordrill.harness.drill.replicators.errors import UnsupportedOperation
from mirrordrill.harness.drill.replicators.measurements import ReplicatorMetrics
from mirrordrill.harness.drill.replicators.setup import ReplicationSetup
from mirrordrill.primitives.bootstrap import Artifacts
from mirrordrill.primitives.kafka.group_offsets import committed_offsets
from mirrordrill.primitives.lifecycle import StartedInWith

if TYPE_CHECKING:  # the drill file's model imports this package (for the kinds it accepts)
    from mirrordrill.harness.drill.loops import IdentityLoop
    from mirrordrill.harness.drill.schema import FlowDef, ReplicationDef, Scenario
    from mirrordrill.harness.lab.spark.deployment import SparkDeployment
    from mirrordrill.replicator.policy import ReplicationPolicy

Report = Callable[[tuple, str], None]  # (place in the drill file, what is wrong and the fix)
DEFAULT_STOP_GRACE_S = 30.0
FLIGHT_RECORDING_FILE = "flight.jfr"  # a node's flight recording (run --jfr), in the node's own folder
SOURCE_PROBE_TIMEOUT_S = 3.0  # is the source reachable at all, before asking it for a group's offsets


@dataclass(frozen=True)
class CheckpointWait:
    """How a planned move's wait for checkpoints carrying the group's commit went."""

    caught_up: bool
    detail: str


@dataclass(frozen=True)
class MadeOnCluster:
    """Something the replicator itself creates on a cluster for one flow, besides the remote copies
    (``mirrordrill plan`` lists it on existing clusters, and the drill's principal needs rights to it)."""

    cluster: str
    name: str
    what: str  # "topic" or "group"
    why: str = ""
    if_absent: bool = False  # made only where it does not exist yet (and then deleted at the end)


@dataclass(frozen=True)
class RunInputs:
    """What an adapter's options may be built from besides the drill file's ``replication``."""

    artifacts: Artifacts | None  # the JVM artifacts in the cache (None: the adapter finds its own)
    spark: Callable[[], SparkDeployment]  # where Spark runs, with ``run --spark-master`` applied
    base_dir: Path  # the drill file's folder: relative paths in it are read from there
    flight_recording: bool = False  # run --jfr: each replicator JVM records a flight recording (``flight_recordable``)
    trace_records: bool = False  # run --trace: the replicator traces each record's send and ack (``traces_records``)

    def diagnostics(self) -> dict[str, bool]:
        """The options ``run --jfr`` and ``--trace`` give an adapter that takes both, those that are on."""
        return {name: True for name, on in (("flight_recording", self.flight_recording),
                                             ("trace_records", self.trace_records)) if on}


class ReplicatorAdapter(StartedInWith, ABC):
    """What the scenario engine drives: one replicator (of any kind) for one setup; a drill's ``with``
    block stops it on every exit path.

    Each adapter class also declares its facts (class attributes and class methods), which the
    drill file's checks, the engine, the run folder and the CLI read instead of naming kinds."""

    kind: ClassVar[str]  # its name in the registry, the drill file and ``--replicator``
    # The fields of the drill file's ``replication`` section it reads beyond flows and policy;
    # one it does not read is warned about ("mode applies to the pyspark replicator only").
    reads_fields: ClassVar[frozenset[str]] = frozenset()
    uses_spark: ClassVar[bool] = False  # runs on Spark: the run records where, and Spark faults apply
    sweepable: ClassVar[bool] = False  # sweep, calibrate and bench can run it (they set its parameters)
    # ``run --jfr`` applies: each of its JVMs writes FLIGHT_RECORDING_FILE in its node's folder when it stops
    flight_recordable: ClassVar[bool] = False
    # ``run --trace`` applies: its producers write RecordTrace's lines (each record's send and ack) in its folder
    traces_records: ClassVar[bool] = False
    # Its configuration's warnings (settings it accepts and ignores) are shown when the file is checked.
    warns_ignored_settings: ClassVar[bool] = False
    # Why a failback with ``restore_history`` cannot bring a wiped cluster's history back with this
    # replicator (None: it can, through the flow setting ``mirrordrill.restore.history``).
    cannot_restore_history: ClassVar[str | None] = (
        "only the bundled replicator has a flow that writes '<cluster>.<topic>' back into '<topic>'")

    def __init__(self, setup: ReplicationSetup) -> None:
        self.setup = setup

    @classmethod
    def options_for(cls, replication: ReplicationDef, run: RunInputs) -> dict[str, Any]:
        """Its constructor's options for a drill (``make_replicator`` checks their names)."""
        return {}

    @classmethod
    def flight_recording_refusal(cls, run: RunInputs) -> str | None:
        """Why ``run --jfr`` cannot record this replicator's JVMs in ``run`` (None: it can)."""
        if cls.flight_recordable:
            return None
        return f"--jfr records the JVMs the harness starts; the {cls.kind} replicator has none it can record"

    @classmethod
    def trace_refusal(cls) -> str | None:
        """Why ``run --trace`` cannot trace this replicator's records (None: it can)."""
        if cls.traces_records:
            return None
        return (f"--trace needs a replicator whose producer writes the trace (the bundled one); the {cls.kind} "
                "replicator's does not")

    @classmethod
    def file_problems(cls, s: Scenario, base_dir: Path | None = None) -> Iterable[tuple[tuple, str]]:
        """What in drill file ``s`` this replicator cannot run, as (place in the file, why and the fix):
        ``validate`` reports each before anything starts. ``base_dir``: the file's folder, where relative
        paths in it are read from. None by default."""
        return ()

    @classmethod
    def file_warnings(cls, s: Scenario) -> Iterable[tuple[tuple, str]]:
        """What in ``s`` this replicator accepts and ignores (one drill file serves every replicator,
        so it is no error), as (place in the file, what is ignored). None by default."""
        return ()

    @classmethod
    def identity_loop_problems(cls, s: Scenario, loop: IdentityLoop, error: Report, warn: Report) -> None:
        """What a cycle of flows under the identity policy (``harness.drill.loops``) means for this
        replicator. By default a warning: a team's own replicator gets no source-alias prefix and may
        or may not mark the records it copies."""
        warn(("replication", "flows", loop.index),
             f"with the identity policy your replicator gets no source-alias prefix ({{remote_prefix}} is "
             f"''), so topic {loop.topic!r} goes round {loop.cycle} forever unless it marks records itself; use "
             f"policy: default, or leave {loop.topic!r} out of this flow (topics_exclude)")

    @classmethod
    def made_for_flow(cls, flow: FlowDef, policy: ReplicationPolicy) -> list[MadeOnCluster]:
        """What it creates for ``flow`` besides the remote copies. By default the flow's checkpoints
        topic on its target, as MirrorMaker 2 and the bundled replicator write one."""
        return [MadeOnCluster(flow.target, policy.checkpoints_topic(flow.source), "topic",
                              "consumer-group checkpoints of the flow")]

    @classmethod
    def version(cls) -> str:
        """The replicator under test, as the run folder records it."""
        return "unknown"

    @classmethod
    def delivery_mode(cls, mode: str | None, exactly_once: bool) -> str:
        """How it delivers in this drill, from the file's ``replication.mode`` and
        ``replication.mirrormaker2.exactly_once`` (each read only by the kind it belongs to)."""
        return "n/a"

    # --- lifecycle --------------------------------------------------------------------
    @abstractmethod
    def start(self, timeout_s: float | None = None) -> None:
        """Start every process and return once the replicator is ready (ReplicatorNotReady if not)."""

    @abstractmethod
    def stop(self, grace_s: float = DEFAULT_STOP_GRACE_S) -> None:
        """SIGTERM, then SIGKILL whatever is still running after ``grace_s``."""

    @abstractmethod
    def kill(self) -> None:
        """SIGKILL: a crash, with no chance to flush or commit."""

    @abstractmethod
    def pause(self) -> None:
        """SIGSTOP: frozen (a long GC pause, a stalled VM), distinct from a crash."""

    @abstractmethod
    def resume(self) -> None:
        """SIGCONT after ``pause``."""

    def restart(self, grace_s: float = DEFAULT_STOP_GRACE_S, hard: bool = False, timeout_s: float | None = None) -> None:
        """Stop (or kill, when ``hard``) and start again; returns when ready."""
        if hard:
            self.kill()
        else:
            self.stop(grace_s)
        self.start(timeout_s)

    @property
    @abstractmethod
    def running(self) -> bool:
        """True while every process of the replicator is alive (paused counts as alive)."""

    # --- observation ------------------------------------------------------------------
    @abstractmethod
    def metrics(self) -> ReplicatorMetrics | None:
        """Per topic-partition rates, lag and latency where the replicator can tell."""

    def exits_unasked(self) -> list[str]:
        """Each of its processes that ended with nobody asking it to (a crash), in words with its log.
        Empty by default: an adapter without processes of its own cannot tell."""
        return []

    def node_faults(self) -> list[dict[str, Any]]:
        """Each fault a ``*_replicator_node`` step did to one node: the step, the node, when, and
        which node held which task before it and after it (where the replicator tells). Empty by default."""
        return []

    def start_times(self) -> list[dict[str, Any]]:
        """Each start of this replicator's processes seen so far: when it began (epoch ms) and
        seconds from it to the first record moved, with the phases on the way where the
        replicator reports them. Empty for a replicator that does not tell."""
        return []

    def count_target_from_now(self) -> None:
        """Lag counts only what targets receive from now on (see OffsetLagProbe.count_target_from_now)."""
        raise UnsupportedOperation(f"{type(self).__name__} cannot rebase its lag measurement")

    def forget_source_positions(self, source: str) -> None:  # noqa: B027  (a no-op by default, not abstract)
        """``source`` was wiped: positions kept from before would point into a log that restarted
        at offset 0. Called before start; a replicator keeping positions only in its own (fresh)
        working folder has nothing to forget."""

    @abstractmethod
    def translate_offsets(self, group: str, source: str, target: str, *,
                          source_lost: bool = False) -> dict[tuple[str, int], int]:
        """Target-cluster offsets ``{(remote_topic, partition): offset}`` for ``group``'s source commits.

        ``source_lost``: the source has been declared lost (an unplanned failover), so an
        adapter that could ask it for the group's commits goes straight to what the target holds.
        """

    def await_checkpoints(self, group: str, source: str, target: str, timeout_s: float) -> CheckpointWait | None:
        """A planned move has committed ``group`` on ``source``: wait (at most ``timeout_s``) until
        the replicator's checkpoints on ``target`` carry those commits, as a runbook waits before
        translating, and say how that went. None: this replicator's translation needs no wait."""
        return None

    def source_commits(self, group: str, source: str, target: str,
                       topics: Callable[[str], bool] | None = None) -> dict[tuple[str, int], int]:
        """``group``'s committed offsets on ``source`` (of the topics ``topics`` accepts; all when None),
        asked from ``target``'s data center through the WAN, as an operator there would: a source cut
        off by a partition is as unavailable as a dead one."""
        cluster = self.setup.env.cluster(source)
        # a dead or cut-off source fails this in seconds; the group lookup would wait much longer
        cluster.admin(from_cluster=target).list_topics(timeout=SOURCE_PROBE_TIMEOUT_S)
        return committed_offsets(cluster.client_config(from_cluster=target), group, topics, timeout_s=15)

    def checkpoint_offsets(self, group: str, source: str, target: str) -> dict[tuple[str, int], int]:
        """``group``'s newest checkpoint per remote partition, its downstream offset as the replicator
        wrote it on ``target`` (what ``RemoteClusterUtils.translateOffsets`` hands an application):
        the ``checkpoint`` failover strategy starts there, with no check of its own."""
        raise UnsupportedOperation(f"{type(self).__name__} writes no checkpoints to start a group from; "
                                   f"choose the translated, timestamp, earliest or latest strategy")

    def remote_topic(self, source_cluster: str, topic: str) -> str:
        """Name ``topic`` of ``source_cluster`` gets on a target cluster."""
        return self.setup.remote_topic(source_cluster, topic)

    @abstractmethod
    def log_paths(self) -> dict[str, Path]:
        """Every log file this replicator writes, by process name."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Configuration as rendered (secrets redacted) and where things are, for reports."""

