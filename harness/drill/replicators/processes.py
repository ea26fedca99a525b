"""Replicators made of supervised processes: the shared lifecycle, and one process per node."""

from __future__ import annotations

import re
import signal
import time
from abc import abstractmethod
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from confluent_kafka import KafkaException

from mirrordrill.harness.drill.replicators.errors import ReplicatorError, ReplicatorNotReady
from mirrordrill.harness.drill.replicators.interface import DEFAULT_STOP_GRACE_S, ReplicatorAdapter
from mirrordrill.harness.drill.replicators.measurements import OffsetLagProbe, ReplicatorMetrics
from mirrordrill.harness.drill.replicators.setup import FlowSpec, ReplicationSetup
from mirrordrill.primitives.process import ManagedProcess
from mirrordrill.primitives.redaction import redact_properties

if TYPE_CHECKING:
    from mirrordrill.harness.drill.schema import ReplicationDef


class ProcessReplicator(ReplicatorAdapter):
    """A replicator made of ``ManagedProcess``es registered with the environment's supervisor.

    Subclasses build their processes (``_processes``) and say when they are ready
    (``_wait_ready``); lifecycle, signals and log paths are shared.
    """

    default_ready_timeout_s: ClassVar[float] = 120.0

    def __init__(self, setup: ReplicationSetup, ready_timeout_s: float | None = None) -> None:
        super().__init__(setup)
        self.ready_timeout_s = ready_timeout_s or self.default_ready_timeout_s
        self._probe = OffsetLagProbe(setup)
        self._registered: set[int] = set()

    @property
    @abstractmethod
    def processes(self) -> list[ManagedProcess]:
        """Every process of this replicator (started or not)."""

    def _prepare(self) -> None:
        """Write configuration files before the processes start (override as needed)."""

    @abstractmethod
    def _wait_ready(self, started_at: float, log_offsets: dict[str, int], deadline: float) -> None:
        """Block until ready or raise ReplicatorNotReady; logs are read from ``log_offsets``."""

    def start(self, timeout_s: float | None = None) -> None:
        self._prepare()
        log_offsets = {}
        started_at = time.time()
        try:
            for proc in self.processes:
                if id(proc) not in self._registered:
                    # The environment stops it too, on whichever exit path comes first.
                    self.setup.env.supervisor.add(proc)
                    self._registered.add(id(proc))
                proc.log_path.parent.mkdir(parents=True, exist_ok=True)
                log_offsets[proc.name] = proc.log_path.stat().st_size if proc.log_path.exists() else 0
                if proc.cwd is not None:
                    Path(proc.cwd).mkdir(parents=True, exist_ok=True)
                if not proc.running:
                    proc.start()
            self._wait_ready(started_at, log_offsets, time.monotonic() + (timeout_s or self.ready_timeout_s))
        except BaseException:
            self.stop(grace_s=10.0)
            raise

    def _each(self, action) -> None:
        procs = self.processes
        if len(procs) <= 1:
            for p in procs:
                action(p)
            return
        # In parallel, so one slow shutdown does not delay the others' signals.
        with ThreadPoolExecutor(max_workers=len(procs)) as pool:
            list(pool.map(action, procs))

    def stop(self, grace_s: float = DEFAULT_STOP_GRACE_S) -> None:
        self._each(lambda p: p.stop(grace_s))

    def kill(self) -> None:
        self._each(lambda p: p.kill())

    def pause(self) -> None:
        for p in self.processes:
            p.pause()

    def resume(self) -> None:
        for p in self.processes:
            p.resume()

    @property
    def running(self) -> bool:
        return bool(self.processes) and all(p.running for p in self.processes)

    @property
    def paused(self) -> bool:
        return any(p.paused for p in self.processes)

    def metrics(self) -> ReplicatorMetrics | None:
        return self._probe.sample()

    def count_target_from_now(self) -> None:
        self._probe.count_target_from_now()

    def log_paths(self) -> dict[str, Path]:
        return {p.name: p.log_path for p in self.processes}

    def exits_unasked(self) -> list[str]:
        return [f"{p.name} exited by itself ({exit_in_words(code)}); its log: {p.log_path}"
                for p in self.processes if (code := p.exited_unasked) is not None]

    def _raise_if_dead(self, what: str) -> None:
        for p in self.processes:
            if not p.running and not p.paused:
                raise ReplicatorNotReady(f"{p.name} exited (code {p.returncode}) while {what}; "
                                         f"log: {p.log_path}\n--- last lines ---\n{p.log_tail(40)}")


def exit_in_words(code: int) -> str:
    """``-11`` -> ``killed by signal 11 (SIGSEGV)``: Popen's negative codes are the signal that ended it."""
    if code >= 0:
        return f"exit code {code}"
    try:
        return f"killed by signal {-code} ({signal.Signals(-code).name})"
    except ValueError:
        return f"killed by signal {-code}"


_HARNESS_LOG_LINE = "===== mirrordrill: "


def read_log_since(path: Path, offset: int) -> str:
    """What the process logged after byte ``offset`` ('' when there is no log yet).

    The harness's own "starting <argv>" lines are left out: a readiness pattern must match
    what the process said, not its command line.
    """
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            text = fh.read().decode(errors="replace")
    except OSError:
        return ""
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith(_HARNESS_LOG_LINE))


@dataclass
class ProcessNode:
    """One process of a node-based replicator: the flows placed together in ``location``, its
    folder, the properties rendered for it (once written) and the process. Subclasses name the
    process and its two files."""

    location: str
    flows: list[FlowSpec]
    workdir: Path
    process: ManagedProcess | None = field(default=None, repr=False)
    properties: str | None = None
    # Set when the properties hold secrets: the file the process reads lives there (the
    # run folder keeps a redacted copy under config_name).
    secret_dir: Path | None = None

    config_name: ClassVar[str]
    log_name: ClassVar[str]

    @property
    def name(self) -> str:
        raise NotImplementedError

    @property
    def config_path(self) -> Path:
        if self.secret_dir is not None:
            return self.secret_dir / f"{re.sub(r'[^A-Za-z0-9._-]', '_', self.name)}-{self.config_name}"
        return self.workdir / self.config_name

    @property
    def log_path(self) -> Path:
        return self.workdir / self.log_name


NodeT = TypeVar("NodeT", bound=ProcessNode)  # a replicator's own kind of node


def flow_placements(replication: ReplicationDef) -> set[tuple[str, str]]:
    """(target, where its replicator runs) of each flow: the target's location, or the source's
    with ``placement: source``."""
    return {(f.target, f.target if f.placement == "target" else f.source) for f in replication.flows}


class NodeReplicator(ProcessReplicator, Generic[NodeT]):
    """A replicator run as one process per node, each with its own rendered properties file and
    log: MirrorMaker 2 and ours alike."""

    nodes: list[NodeT]
    _node_faults: list[dict[str, Any]]  # see note_node_fault

    label: ClassVar[str]  # what the readiness error calls the replicator
    # the drill-file field that sets how many nodes it runs (None: one per location, not settable)
    nodes_setting: ClassVar[str | None] = None
    # how often ``_wait_ready`` asks the nodes: each time is up to this much between ready and the load
    ready_poll_s: ClassVar[float] = 1.0

    @classmethod
    @abstractmethod
    def planned_nodes(cls, replication: ReplicationDef) -> int:
        """How many nodes a drill file's ``replication`` runs: the node steps' ``node`` is checked
        against it before anything starts."""

    @abstractmethod
    def render(self, node: NodeT) -> str:
        """The properties text of one node's process (needs the environment's addresses)."""

    @abstractmethod
    def _node_not_ready(self, node: NodeT, started_at: float, log: str) -> list[str]:
        """Why ``node`` is not ready yet ([] when it is); ``log`` is what it logged since starting."""

    def _wait_ready(self, started_at: float, log_offsets: dict[str, int], deadline: float) -> None:
        """Ask every node, every ``ready_poll_s``, until none has a reason left or the deadline passes."""
        reasons = ["not checked yet"]
        while time.monotonic() < deadline:
            self._raise_if_dead("starting")
            reasons = []
            for node in self.nodes:
                try:
                    reasons += self._node_not_ready(node, started_at,
                                                    read_log_since(node.log_path, log_offsets[node.name]))
                except (KafkaException, TimeoutError) as err:  # a busy cluster: look again
                    reasons.append(f"{node.name}: could not check yet: {err}")
            if not reasons:
                return
            time.sleep(self.ready_poll_s)
        tails = "\n".join(f"--- {n.log_path} (last lines) ---\n{n.process.log_tail(25)}"
                          for n in self.nodes if n.process is not None)
        raise ReplicatorNotReady(f"{self.label} not ready after {self.ready_timeout_s:.0f}s: "
                                 + "; ".join(reasons) + "\n" + tails)

    def with_secret_dir(self, nodes: list[NodeT]) -> list[NodeT]:
        """``nodes`` with their properties placed in the environment's secret folder when it has one.

        Set before any command line is built: the process must read the real file there.
        """
        secrets = getattr(self.setup.env, "secrets", None)
        for node in nodes:
            node.secret_dir = secrets.path if secrets is not None else None
        return nodes

    def brokers_of(self, cluster: str) -> int:
        return next(c.brokers for c in self.setup.env.spec.clusters if c.name == cluster)

    def _prepare(self) -> None:
        for node in self.nodes:
            node.workdir.mkdir(parents=True, exist_ok=True)
            node.properties = self.render(node)
            secrets = getattr(self.setup.env, "secrets", None)
            if secrets is None or node.secret_dir is None:
                node.config_path.write_text(node.properties)
                continue
            secrets.file(node.config_path.name, node.properties)
            (node.workdir / node.config_name).write_text(redact_properties(node.properties))

    @property
    def processes(self) -> list[ManagedProcess]:
        return [n.process for n in self.nodes if n.process is not None]

    # --- one node at a time (the *_replicator_node steps) ------------------------------
    def __init__(self, setup: ReplicationSetup, ready_timeout_s: float | None = None) -> None:
        super().__init__(setup, ready_timeout_s)
        self._node_faults = []

    def node(self, index: int) -> NodeT:
        """The node at ``index`` of ``nodes`` (summary.json lists them in this order)."""
        if not 0 <= index < len(self.nodes):
            raise ReplicatorError(f"{self.label} has nodes 0..{len(self.nodes) - 1}; there is no node {index}")
        return self.nodes[index]

    def node_copying(self, topic: str, partition: int) -> int:
        """The index of the node whose work covers ``partition`` of source ``topic`` now. By default
        the first whose flows select the topic (a process runs every partition of its flows)."""
        for i, node in enumerate(self.nodes):
            if any(topic in self._probe.selected_topics(flow) for flow in node.flows):
                return i
        raise ReplicatorError(f"no node of {self.label} copies topic {topic!r}")

    def task_assignment(self) -> dict[str, int | str] | None:
        """Which node holds which task now (task -> node index), where the replicator tells; else None."""
        return None

    def note_node_fault(self, kind: str, index: int, at_ms: int) -> None:
        """Keep a node fault with the assignment before it; it is the previous fault's "after"."""
        before = self._assignment_now()
        if self._node_faults and self._node_faults[-1].get("after") is None:
            self._node_faults[-1]["after"] = before
        self._node_faults.append({"step": kind, "node": index, "node_name": self.node(index).name,
                                  "at_ms": at_ms, "before": before, "after": None})

    def _assignment_now(self) -> dict[str, int | str] | None:
        try:
            return self.task_assignment()
        except (KafkaException, TimeoutError, OSError, ReplicatorError):
            return None  # a cluster that is down: the fault is still recorded

    def node_faults(self) -> list[dict[str, Any]]:
        return [dict(f) for f in self._node_faults]

    def stop(self, grace_s: float = DEFAULT_STOP_GRACE_S) -> None:
        # the last fault's "after": the assignment at the end, read while the group still runs
        if self._node_faults and self._node_faults[-1].get("after") is None:
            self._node_faults[-1]["after"] = self._assignment_now()
        super().stop(grace_s)

    def kill_node(self, index: int) -> str:
        proc = self._process_of(index)
        proc.kill()
        return f"killed {proc.name} (SIGKILL)"

    def bounce_node(self, index: int, timeout_s: float | None = None) -> str:
        """Stop the node cleanly, start it again with the same configuration, wait until it is back."""
        node, proc = self.node(index), self._process_of(index)
        proc.stop()
        offset = node.log_path.stat().st_size if node.log_path.exists() else 0
        started_at = time.time()
        proc.start()
        deadline = time.monotonic() + (timeout_s or self.ready_timeout_s)
        reasons = ["not checked yet"]
        while time.monotonic() < deadline:
            if not proc.running:
                raise ReplicatorNotReady(f"{proc.name} exited (code {proc.returncode}) after its restart; "
                                         f"log: {proc.log_path}")
            try:
                reasons = self._node_back(node, started_at, read_log_since(node.log_path, offset))
            except (KafkaException, TimeoutError) as err:
                reasons = [f"{node.name}: could not check yet: {err}"]
            if not reasons:
                return f"stopped {proc.name} cleanly and started it again"
            time.sleep(self.ready_poll_s)
        raise ReplicatorNotReady(f"{proc.name} not back after {self.ready_timeout_s:.0f}s: " + "; ".join(reasons))

    def _node_back(self, node: NodeT, started_at: float, log: str) -> list[str]:
        """Why a restarted node is not back yet; by default what its first start waits for."""
        return self._node_not_ready(node, started_at, log)

    def pause_node(self, index: int) -> str:
        proc = self._process_of(index)
        proc.pause()
        return f"paused {proc.name} (SIGSTOP)"

    def resume_node(self, index: int) -> str:
        proc = self._process_of(index)
        proc.resume()
        return f"resumed {proc.name} (SIGCONT)"

    def _process_of(self, index: int) -> ManagedProcess:
        node = self.node(index)
        if node.process is None:
            raise ReplicatorError(f"{node.name} has no process")
        return node.process

    def node_summary(self, node: NodeT) -> dict[str, Any]:
        """What describe() says of every node: where its files are and its redacted properties."""
        text = node.properties
        if text is None:
            try:
                text = self.render(node)
            except Exception as err:  # addresses exist only once the environment runs
                text = f"# not rendered yet: {err}"
        return {"index": self.nodes.index(node), "name": node.name, "flows": [f.name for f in node.flows],
                "config_path": str(node.config_path),
                "log_path": str(node.log_path), "pid": node.process.pid if node.process else None,
                "properties": redact_properties(text)}
