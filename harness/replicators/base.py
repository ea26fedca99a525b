"""The replicator interface the scenario engine drives, and what every adapter shares.

A drill describes *what* to replicate once (``ReplicationSetup``: flows, naming policy,
environment, working folder); an adapter (``Replicator``) decides *how* — our PySpark
replicator, Apache MirrorMaker 2, or a user's own command — and exposes the same lifecycle
(start, stop, kill, pause, restart), measurements and offset translation.
"""

from __future__ import annotations

import re
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from primitives.process import ManagedProcess
from primitives.redaction import redact_properties
from replicator.config import ConfigError, ConfigWarning, FlowConfig, ReplicatorConfig, parse_mm2_properties
from replicator.filters import DEFAULT_TOPICS, DEFAULT_TOPICS_EXCLUDE
from replicator.policy import POLICY_NAMES, DefaultReplicationPolicy, IdentityReplicationPolicy, policy_from_name

if TYPE_CHECKING:
    from harness.environment import Environment

Placement = Literal["target", "source"]
PLACEMENTS: tuple[str, ...] = ("target", "source")
DEFAULT_STOP_GRACE_S = 30.0

DRILL_FLOW_INTERVALS: Mapping[str, str] = {
    "refresh.topics.interval.seconds": "5",
    "refresh.groups.interval.seconds": "5",
    "sync.topic.configs.interval.seconds": "5",
    "emit.checkpoints.interval.seconds": "5",
    "sync.group.offsets.interval.seconds": "5",
}
"""Per-flow drill intervals every adapter applies, so MM2 and ours run the same drill (MM2 defaults: 600, 600, 600, 60, 60 s)."""


def replication_factor_for(brokers: int) -> int:
    """The replication factor a cluster of ``brokers`` can hold, as the brokers' own defaults."""
    return min(3, brokers)


# ======================================================================================
# Errors
# ======================================================================================
class ReplicatorError(RuntimeError):
    """A replicator failed to start, died, or could not answer; the message points at its log."""


class ReplicatorNotReady(ReplicatorError):
    """The replicator did not become ready in time (or exited while starting)."""


class UnsupportedOperation(ReplicatorError, NotImplementedError):
    """The replicator cannot do this (e.g. translate offsets without a translation command)."""


class SetupError(ValueError):
    """A replication setup that cannot work; the message names the flow and the setting."""


# ======================================================================================
# What to replicate
# ======================================================================================
_SETTING_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _setting_text(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    raise SetupError(f"setting {key!r}: expected a string, number or boolean, got {type(value).__name__}")


@dataclass(frozen=True)
class FlowSpec:
    """One replication flow ``source -> target`` as a drill describes it.

    ``topics``/``topics_exclude`` are MM2-style regex lists (whole-name match, excludes win).
    ``placement`` says where the replicator runs: near the ``target`` (consume remote,
    produce local; the default) or near the ``source``. ``settings`` are MM2 per-flow keys
    without the ``A->B.`` prefix (``tasks.max``, ``offset.lag.max``, ``consumer.fetch.min.bytes``…).
    """

    source: str
    target: str
    topics: Sequence[str] = DEFAULT_TOPICS
    topics_exclude: Sequence[str] = DEFAULT_TOPICS_EXCLUDE
    placement: Placement = "target"
    settings: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Callers pass lists and YAML scalars; store immutable, MM2-spelled values.
        object.__setattr__(self, "topics", tuple(self.topics))
        object.__setattr__(self, "topics_exclude", tuple(self.topics_exclude))
        if self.placement not in PLACEMENTS:
            raise SetupError(f"flow {self.name}: placement {self.placement!r} is invalid; valid: {', '.join(PLACEMENTS)}")
        if self.source == self.target:
            raise SetupError(f"flow {self.name} replicates a cluster onto itself")
        if isinstance(self.topics, str) or not self.topics:
            raise SetupError(f"flow {self.name}: topics must be a non-empty list of regexes")
        settings: dict[str, str] = {}
        for key, value in dict(self.settings).items():
            if not isinstance(key, str) or not _SETTING_KEY.fullmatch(key) or "->" in key:
                raise SetupError(f"flow {self.name}: invalid setting name {key!r} "
                                 "(write MM2 per-flow keys without the 'A->B.' prefix, e.g. 'tasks.max')")
            if key in ("topics", "topics.exclude", "enabled"):
                raise SetupError(f"flow {self.name}: {key!r} is a field of the flow, not a setting")
            if key.startswith("replication.policy."):
                raise SetupError(f"flow {self.name}: {key!r} is set once for the whole setup "
                                 "(ReplicationSetup.policy / .separator)")
            settings[key] = _setting_text(key, value)
        object.__setattr__(self, "settings", settings)

    @property
    def name(self) -> str:
        """``source->target``, as MM2 writes it."""
        return f"{self.source}->{self.target}"

    @property
    def location(self) -> str:
        """The data center the replicator process runs in."""
        return self.target if self.placement == "target" else self.source

    @property
    def topics_regex(self) -> str:
        """The include list as one regex, joined as MM2 joins it (match the whole name)."""
        return "|".join(self.topics)

    @property
    def topics_exclude_regex(self) -> str:
        """The exclude list as one regex ('' when nothing is excluded)."""
        return "|".join(self.topics_exclude)


@dataclass
class ReplicationSetup:
    """Everything an adapter needs to know about what to replicate, where, and into which folder.

    ``policy`` is ``default`` or ``identity`` (or MM2's class names), ``separator`` the
    remote-topic separator. ``workdir`` (default ``<env.workdir>/replicators``) holds every
    replicator process's folder; it must lie inside the run's folder, where the test-session
    orphan guard looks for leftover processes.
    """

    env: "Environment"
    flows: Sequence[FlowSpec]
    policy: str = "default"
    separator: str = "."
    workdir: Path | None = None

    def __post_init__(self) -> None:
        self.flows = tuple(self.flows)
        self.workdir = Path(self.workdir).resolve() if self.workdir is not None else self.env.workdir / "replicators"
        if not self.flows:
            raise SetupError("a replication setup needs at least one flow")
        short = POLICY_NAMES.get(self.policy.strip())
        if short is None:
            raise SetupError(f"unknown replication policy {self.policy!r}; valid: {', '.join(POLICY_NAMES)}")
        self.policy = short
        if not self.separator:
            raise SetupError("the replication policy separator must not be empty")
        names = [c.name for c in self.env.spec.clusters]
        seen: set[tuple[str, str]] = set()
        for flow in self.flows:
            for end in (flow.source, flow.target):
                if end not in names:
                    raise SetupError(f"flow {flow.name}: unknown cluster {end!r}; clusters are {names}")
            if flow.target not in self.env.spec.remotes_of(flow.source):
                raise SetupError(f"flow {flow.name}: there is no WAN link between {flow.source!r} and "
                                 f"{flow.target!r}; links: {self.env.spec.link_pairs()}")
            if (flow.source, flow.target) in seen:
                raise SetupError(f"flow {flow.name} is listed twice")
            seen.add((flow.source, flow.target))
        for name in names:
            if self.separator in name:
                raise SetupError(f"cluster {name!r} contains the separator {self.separator!r}, so remote topic "
                                 "names could not be traced back to their source")
        # Fail now, not when a process starts: every flow's settings must make a valid config.
        for flow in self.flows:
            self.flow_config(flow)

    # --- naming -----------------------------------------------------------------------
    def replication_policy(self, source: str | None = None) -> DefaultReplicationPolicy:
        """The naming policy; ``source`` is the flow's source alias (what identity names cannot tell)."""
        return policy_from_name(self.policy, self.separator, source_cluster_alias=source)

    def remote_topic(self, source: str, topic: str) -> str:
        """Name of ``topic`` from cluster ``source`` on the target cluster."""
        return self.replication_policy(source).format_remote_topic(source, topic)

    def remote_prefix(self, source: str) -> str:
        """What the policy puts before a replicated topic's name ('' for identity)."""
        policy = self.replication_policy(source)
        return "" if isinstance(policy, IdentityReplicationPolicy) else f"{source}{self.separator}"

    # --- lookups ----------------------------------------------------------------------
    def flow(self, source: str, target: str) -> FlowSpec:
        """The flow ``source->target``; SetupError listing the flows when there is none."""
        for flow in self.flows:
            if flow.source == source and flow.target == target:
                return flow
        raise SetupError(f"no flow {source}->{target}; flows are {[f.name for f in self.flows]}")

    def bootstrap(self, cluster: str, seen_from: str | None) -> str:
        """Bootstrap servers of ``cluster`` for a client placed in ``seen_from`` (WAN when remote)."""
        return self.env.cluster(cluster).bootstrap_from(seen_from)

    # --- the shared configuration model -------------------------------------------------
    def flow_config(self, flow: FlowSpec, defaults: Mapping[str, str] | None = None) -> FlowConfig:
        """The flow as the replicator's validated ``FlowConfig`` (``defaults`` under its settings)."""
        config = self.replicator_config([flow], flow.location, flow_defaults={flow.name: defaults or {}},
                                        resolve_addresses=False)
        return config.flows[0]

    def replicator_config(
        self,
        flows: Iterable[FlowSpec],
        location: str | None,
        *,
        flow_defaults: Mapping[str, Mapping[str, str]] | None = None,
        cluster_settings: Mapping[str, Mapping[str, str]] | None = None,
        top_settings: Mapping[str, str] | None = None,
        resolve_addresses: bool = True,
    ) -> ReplicatorConfig:
        """A ``ReplicatorConfig`` of ``flows`` with every cluster reached from ``location``.

        ``flow_defaults`` (by flow name, ``A->B``) sit under each flow's own settings;
        ``cluster_settings`` become ``<alias>.<key>`` and
        ``top_settings`` top-level keys. The text goes through the MM2 properties loader,
        so a setting is checked exactly as in a user's own file.
        """
        flows = list(flows)
        aliases = sorted({a for f in flows for a in (f.source, f.target)})
        lines = ["clusters = " + ", ".join(aliases)]
        for alias in aliases:
            # Before the environment starts there are no ports: validation only needs a shape.
            address = self.bootstrap(alias, location) if resolve_addresses else "127.0.0.1:9"
            lines.append(_property(f"{alias}.bootstrap.servers", address))
            for key, value in (cluster_settings or {}).get(alias, {}).items():
                lines.append(_property(f"{alias}.{key}", value))
        for key, value in (top_settings or {}).items():
            lines.append(_property(key, value))
        for flow in flows:
            prefix = f"{flow.name}."
            defaults = (flow_defaults or {}).get(flow.name, {})
            lines += [
                _property(prefix + "enabled", "true"),
                _property(prefix + "topics", ", ".join(flow.topics)),
                _property(prefix + "topics.exclude", ", ".join(flow.topics_exclude)),
                _property(prefix + "replication.policy.class", self.policy),
                _property(prefix + "replication.policy.separator", self.separator),
            ]
            for key, value in {**defaults, **flow.settings}.items():
                lines.append(_property(prefix + key, value))
        try:
            return parse_mm2_properties("\n".join(lines) + "\n", "replication setup")
        except ConfigError as err:
            raise SetupError(_setup_message(err)) from None

    def config_warnings(self) -> list[ConfigWarning]:
        """Settings accepted but meaningful to MM2 only (or otherwise surprising)."""
        return list(self.replicator_config(self.flows, None, resolve_addresses=False).warnings)


def _setup_message(err: ConfigError) -> str:
    key = err.key or ""
    flow, _, setting = key.partition(".") if "->" in key.split(".", 1)[0] else ("", "", key)
    where = f"flow {flow}: setting {setting!r}" if flow else f"setting {key!r}"
    text = f"{where}: {err.problem}"
    if err.suggestions:
        text += " (did you mean " + " or ".join(repr(s.split('.', 1)[1] if '->' in s else s)
                                               for s in err.suggestions) + "?)"
    if err.valid:
        text += f"; valid: {err.valid}"
    return text


def _escape_properties(text: str, *, leading: bool) -> str:
    out = []
    for pos, char in enumerate(text):
        if char in "\r\n":
            raise SetupError(f"line breaks are not allowed in settings: {text!r}")
        if char == "\\":
            out.append("\\\\")
        elif char in " \t\f" and pos == 0 and leading:
            out.append("\\" + char)
        else:
            out.append(char)
    return "".join(out)


def _property(key: str, value: str) -> str:
    return f"{key} = {_escape_properties(value, leading=True)}"


# ======================================================================================
# Measurements
# ======================================================================================
@dataclass(frozen=True)
class PartitionMetrics:
    """One replicated topic-partition at one moment. None: unknown or not measurable."""

    flow: str
    topic: str
    remote_topic: str
    partition: int
    source_end_offset: int | None
    target_end_offset: int | None
    lag_records: int | None
    records_per_s: float | None = None
    bytes_per_s: float | None = None
    replication_latency_ms: float | None = None


@dataclass(frozen=True)
class ReplicatorMetrics:
    """Per topic-partition replication metrics; ``method`` says how they were measured."""

    taken_at: float
    method: str
    partitions: tuple[PartitionMetrics, ...]
    notes: tuple[str, ...] = ()

    def total_lag(self) -> int | None:
        """Sum of lags; None when any partition's lag is unknown."""
        lags = [p.lag_records for p in self.partitions]
        return None if any(l is None for l in lags) else sum(lags)  # type: ignore[arg-type]

    def for_flow(self, flow: str) -> list[PartitionMetrics]:
        return [p for p in self.partitions if p.flow == flow]


class OffsetLagProbe:
    """Lag and record rates from end offsets on both sides, for any replicator.

    Lag is ``source end - remote end`` per partition (clamped at 0): exact while the remote
    partition holds one copy of each source record, an underestimate after duplicates (a
    crash replays records). Rates are the change of the remote end offset since the previous
    sample. Bytes/s and latency cannot be read from offsets and stay None. The harness reads
    both clusters locally, so WAN faults do not skew the reading.
    """

    def __init__(self, setup: ReplicationSetup, timeout_s: float = 10.0) -> None:
        self.setup = setup
        self.timeout_s = timeout_s
        self._admins: dict[str, AdminClient] = {}
        self._previous: dict[tuple[str, str, int], tuple[float, int]] = {}
        self._target_base: dict[tuple[str, str, int], int] = {}  # (target cluster, topic, partition) -> offset

    def count_target_from_now(self) -> None:
        """Measure lag against what targets receive from now on, not their whole log.

        For replication out of a wiped (rebuilt) cluster: its offsets restarted at 0 while the
        remote topics still hold the copies made before, so ``source end - remote end`` would
        read zero lag before anything was copied.
        """
        for target in {f.target for f in self.setup.flows}:
            topics = self._admin(target).list_topics(timeout=self.timeout_s).topics
            parts = [TopicPartition(t, p) for t, meta in topics.items() for p in meta.partitions]
            for (topic, p), end in self._end_offsets(target, parts).items():
                self._target_base[(target, topic, p)] = end

    def sample(self) -> ReplicatorMetrics:
        """Measure every flow's selected topic-partitions now."""
        now = time.monotonic()
        rows: list[PartitionMetrics] = []
        notes: list[str] = []
        for flow in self.setup.flows:
            try:
                rows.extend(self._flow_rows(flow, now))
            except (KafkaException, TimeoutError) as err:
                notes.append(f"{flow.name}: not measured: {err}")
        return ReplicatorMetrics(taken_at=time.time(), method="end-offsets", partitions=tuple(rows), notes=tuple(notes))

    def _admin(self, cluster: str) -> AdminClient:
        if cluster not in self._admins:
            self._admins[cluster] = self.setup.env.cluster(cluster).admin()
        return self._admins[cluster]

    def selected_topics(self, flow: FlowSpec) -> dict[str, int]:
        """Source topics the flow replicates (filter, internal topics, cycles), with partition counts."""
        selector = self.setup.flow_config(flow).topic_selector()
        metadata = self._admin(flow.source).list_topics(timeout=self.timeout_s)
        policy = self.setup.replication_policy(flow.source)
        return {
            name: len(t.partitions) for name, t in metadata.topics.items()
            if t.error is None and selector.should_replicate_topic(name) and not policy.is_heartbeats_topic(name)
        }

    def _end_offsets(self, cluster: str, partitions: list[TopicPartition]) -> dict[tuple[str, int], int]:
        if not partitions:
            return {}
        request = {tp: OffsetSpec.latest() for tp in partitions}
        futures = self._admin(cluster).list_offsets(request, request_timeout=self.timeout_s)
        ends: dict[tuple[str, int], int] = {}
        for tp, fut in futures.items():
            try:
                ends[(tp.topic, tp.partition)] = fut.result(timeout=self.timeout_s + 5).offset
            except KafkaException:
                continue  # e.g. the remote topic does not exist yet: unknown, not zero
        return ends

    def _flow_rows(self, flow: FlowSpec, now: float) -> list[PartitionMetrics]:
        topics = self.selected_topics(flow)
        remote = {t: self.setup.remote_topic(flow.source, t) for t in topics}
        target_topics = self._admin(flow.target).list_topics(timeout=self.timeout_s).topics
        source_ends = self._end_offsets(flow.source, [TopicPartition(t, p) for t, n in topics.items() for p in range(n)])
        target_parts = [TopicPartition(remote[t], p) for t, n in topics.items() for p in range(n)
                        if remote[t] in target_topics and p < len(target_topics[remote[t]].partitions)]
        target_ends = self._end_offsets(flow.target, target_parts)
        rows = []
        for topic, count in sorted(topics.items()):
            for p in range(count):
                src = source_ends.get((topic, p))
                dst = target_ends.get((remote[topic], p))
                if dst is not None:
                    dst -= self._target_base.get((flow.target, remote[topic], p), 0)
                lag = max(0, src - dst) if src is not None and dst is not None else None
                rate = None
                key = (flow.name, topic, p)
                if dst is not None:
                    previous = self._previous.get(key)
                    if previous is not None and now > previous[0]:
                        rate = max(0.0, (dst - previous[1]) / (now - previous[0]))
                    self._previous[key] = (now, dst)
                rows.append(PartitionMetrics(flow=flow.name, topic=topic, remote_topic=remote[topic], partition=p,
                                             source_end_offset=src, target_end_offset=dst, lag_records=lag,
                                             records_per_s=rate))
        return rows


# ======================================================================================
# The interface
# ======================================================================================
class Replicator(ABC):
    """What the scenario engine drives: one replicator (of any kind) for one setup."""

    kind: ClassVar[str]

    def __init__(self, setup: ReplicationSetup) -> None:
        self.setup = setup

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

    def count_target_from_now(self) -> None:
        """Lag counts only what targets receive from now on (see OffsetLagProbe.count_target_from_now)."""
        raise UnsupportedOperation(f"{type(self).__name__} cannot rebase its lag measurement")

    def forget_source_positions(self, source: str) -> None:
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

    def remote_topic(self, source_cluster: str, topic: str) -> str:
        """Name ``topic`` of ``source_cluster`` gets on a target cluster."""
        return self.setup.remote_topic(source_cluster, topic)

    @abstractmethod
    def log_paths(self) -> dict[str, Path]:
        """Every log file this replicator writes, by process name."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Configuration as rendered (secrets redacted) and where things are, for reports."""

    # --- context manager: a drill's ``with`` block stops the replicator on every exit path
    def __enter__(self) -> "Replicator":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ProcessReplicator(Replicator):
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

    def _raise_if_dead(self, what: str) -> None:
        for p in self.processes:
            if not p.running and not p.paused:
                raise ReplicatorNotReady(f"{p.name} exited (code {p.returncode}) while {what}; "
                                         f"log: {p.log_path}\n--- last lines ---\n{p.log_tail(40)}")


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


class NodeReplicator(ProcessReplicator):
    """A replicator run as one process per node -- the flows placed together -- each node with
    its own rendered properties file and log (``workdir``, ``config_path``, ``log_path``,
    ``process``, ``properties``, ``name``, ``flows``): MirrorMaker 2 and ours alike."""

    nodes: list[Any]

    @abstractmethod
    def render(self, node: Any) -> str:
        """The properties text of one node's process (needs the environment's addresses)."""

    def brokers_of(self, cluster: str) -> int:
        return next(c.brokers for c in self.setup.env.spec.clusters if c.name == cluster)

    def _prepare(self) -> None:
        for node in self.nodes:
            node.workdir.mkdir(parents=True, exist_ok=True)
            node.properties = self.render(node)
            node.config_path.write_text(node.properties)

    @property
    def processes(self) -> list[ManagedProcess]:
        return [n.process for n in self.nodes if n.process is not None]

    def node_summary(self, node: Any) -> dict[str, Any]:
        """What describe() says of every node: where its files are and its redacted properties."""
        text = node.properties
        if text is None:
            try:
                text = self.render(node)
            except Exception as err:  # addresses exist only once the environment runs
                text = f"# not rendered yet: {err}"
        return {"name": node.name, "flows": [f.name for f in node.flows], "config_path": str(node.config_path),
                "log_path": str(node.log_path), "pid": node.process.pid if node.process else None,
                "properties": redact_properties(text)}

