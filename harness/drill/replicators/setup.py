"""What to replicate: the flows a drill describes, the naming policy, where each process runs.

A ``ReplicationSetup`` is checked as the replicator checks its own configuration: every flow
goes through the MM2 properties loader (``replicator.config``), so a drill's setting is judged
exactly as in a user's own file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from mirrordrill.harness.drill.replicators.errors import SetupError
from mirrordrill.primitives.config_errors import ConfigError, ConfigWarning, InvalidSetting
from mirrordrill.primitives.properties_syntax import format_property
from mirrordrill.replicator.config.flow import FlowConfig
from mirrordrill.replicator.config.properties_reader import parse_mm2_properties
from mirrordrill.replicator.config.settings import ReplicatorConfig
from mirrordrill.replicator.config.validation import check_flow_ends, check_separator
from mirrordrill.replicator.filters import DEFAULT_TOPICS, DEFAULT_TOPICS_EXCLUDE
from mirrordrill.replicator.policy import POLICY_NAMES, DefaultReplicationPolicy, IdentityReplicationPolicy, policy_from_name

if TYPE_CHECKING:
    from mirrordrill.harness.lab.environment import Environment

Placement = Literal["target", "source"]
PLACEMENTS: tuple[str, ...] = ("target", "source")

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
        try:
            check_flow_ends(self.source, self.target)  # the replicator's own rule for a flow
        except InvalidSetting as err:
            raise SetupError(_invalid_message(err)) from None
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

    env: Environment
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
        names = [c.name for c in self.env.spec.clusters]
        try:
            check_separator(self.separator, names)
        except InvalidSetting as err:
            raise SetupError(_invalid_message(err)) from None
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
        # Fail now, not when a process starts: every flow's settings must make a valid config.
        for flow in self.flows:
            self.flow_config(flow)

    @property
    def folder(self) -> Path:
        """``workdir`` as ``__post_init__`` resolved it (the field is optional only as an argument)."""
        assert self.workdir is not None
        return self.workdir

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
        lines = [format_property("clusters", ", ".join(aliases))]
        for alias in aliases:
            # Before the environment starts there are no ports: validation only needs a shape.
            address = self.bootstrap(alias, location) if resolve_addresses else "127.0.0.1:9"
            lines.append(format_property(f"{alias}.bootstrap.servers", address))
            cluster = self.env.cluster(alias) if resolve_addresses else None
            if cluster is not None and cluster.security is not None:
                # MM2 hands <alias>.security.protocol, ssl.* and sasl.* to every client of the cluster.
                for key, value in cluster.client_security.jvm().items():
                    lines.append(format_property(f"{alias}.{key}", value))
            for key, value in (cluster_settings or {}).get(alias, {}).items():
                lines.append(format_property(f"{alias}.{key}", value))
        for key, value in (top_settings or {}).items():
            lines.append(format_property(key, value))
        for flow in flows:
            prefix = f"{flow.name}."
            defaults = (flow_defaults or {}).get(flow.name, {})
            lines += [
                format_property(prefix + "enabled", "true"),
                format_property(prefix + "topics", ", ".join(flow.topics)),
                format_property(prefix + "topics.exclude", ", ".join(flow.topics_exclude)),
                format_property(prefix + "replication.policy.class", self.policy),
                format_property(prefix + "replication.policy.separator", self.separator),
            ]
            for key, value in {**defaults, **flow.settings}.items():
                lines.append(format_property(prefix + key, value))
        try:
            return parse_mm2_properties("\n".join(lines) + "\n", "replication setup")
        except ConfigError as err:
            raise SetupError(_setup_message(err)) from None

    def config_warnings(self) -> list[ConfigWarning]:
        """Settings accepted but meaningful to MM2 only (or otherwise surprising)."""
        return list(self.replicator_config(self.flows, None, resolve_addresses=False).warnings)


def _invalid_message(err: InvalidSetting) -> str:
    return f"{err.message}; valid: {err.valid}" if err.valid else err.message


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
