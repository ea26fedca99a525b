"""The replicator's configuration: MirrorMaker 2 properties or our YAML, one model.

A team points the replicator at the ``connect-mirror-maker.properties`` it already runs MM2
with, or at the equivalent YAML; both load into ``ReplicatorConfig``, and
``to_mm2_properties`` renders a model back into a file MM2 runs with the same meaning.

How MM2 keys are treated (names, defaults and precedence checked against apache/kafka
``connect/mirror``: MirrorMakerConfig, MirrorSourceConfig, MirrorCheckpointConfig,
MirrorHeartbeatConfig, MirrorConnectorConfig, MirrorClientConfig):

* Honoured: ``clusters``; ``A.bootstrap.servers``; ``A->B.enabled`` (default false, as in
  MM2); every replication setting of the source, checkpoint and heartbeat connectors
  (``FLOW_PROPERTY_KEYS``), at top level as defaults and per flow as ``A->B.<key>``.
* Client settings: ``security.protocol``, ``ssl.*``, ``sasl.*`` at top level or per
  cluster, and ``A.consumer.*``, ``A.producer.*``, ``A.admin.*``, ``A->B.consumer.*`` …,
  passed to the clients unvalidated, with MM2's precedence (see
  ``ReplicatorConfig.client_config``). ``auto.offset.reset`` is the model's
  ``starting_offsets``, because Spark's Kafka source takes it only as ``startingOffsets``.
* Accepted for MM2, ignored by our replicator, kept in ``mm2_only`` and reported as a
  warning: Connect worker settings (``offset.storage.*``, ``config.storage.*``,
  ``status.storage.*``, ``exactly.once.source.support``, REST listeners, …), ACL sync,
  ``errors.*``, and similar connector plumbing. ``to_mm2_properties`` writes them back.
* Accepted only with their default value: ``key|value|header.converter`` (must be
  ByteArrayConverter, or MM2 would not copy raw bytes), ``topic.filter.class``,
  ``group.filter.class``, ``config.property.filter.class``, ``forwarding.admin.class``;
  we cannot run custom Java classes.
* Rejected with an explanation: Connect transforms/predicates, ``name``,
  ``connector.class``, ``*.cluster.alias`` (MM2 sets them), the ``*.blacklist`` /
  ``*.whitelist`` names removed in Kafka 4.0, top-level ``enabled`` /
  ``bootstrap.servers``, and top-level ``consumer.*`` / ``producer.*`` / ``admin.*``,
  which MM2 silently ignores.
* Our own knobs live under ``mirrordrill.`` (``A->B.mirrordrill.mode``, …); MM2 ignores them.
"""

from __future__ import annotations

import difflib
import re
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from replicator.filters import (
    DEFAULT_CONFIG_PROPERTIES_EXCLUDE,
    DEFAULT_GROUPS,
    DEFAULT_GROUPS_EXCLUDE,
    DEFAULT_TOPICS,
    DEFAULT_TOPICS_EXCLUDE,
    ConfigPropertyFilter,
    GroupFilter,
    TopicFilter,
    TopicSelector,
)
from replicator.policy import POLICY_CLASSES, POLICY_NAMES, DefaultReplicationPolicy, policy_from_name

__all__ = [
    "FLOW_PROPERTY_KEYS",
    "ClusterConfig",
    "ConfigError",
    "ConfigWarning",
    "FlowConfig",
    "ReplicatorConfig",
    "load_config",
    "parse_mm2_list",
    "parse_mm2_properties",
    "parse_yaml",
    "read_properties",
    "to_mm2_properties",
]


# ======================================================================================
# Errors and warnings
# ======================================================================================
class ConfigError(ValueError):
    """A configuration problem, located in its file (name, line, key) with what would be valid."""

    def __init__(
        self,
        problem: str,
        *,
        source: str,
        line: int | None = None,
        key: str | None = None,
        valid: str | None = None,
        suggestions: Iterable[str] = (),
    ) -> None:
        self.problem = problem
        self.source = source
        self.line = line
        self.key = key
        self.valid = valid
        self.suggestions = tuple(suggestions)
        super().__init__(self._render())

    def _render(self) -> str:
        where = self.source if self.line is None else f"{self.source}, line {self.line}"
        text = f"{where}: {self.key}: {self.problem}" if self.key else f"{where}: {self.problem}"
        if self.suggestions:
            text += " (did you mean " + " or ".join(repr(s) for s in self.suggestions) + "?)"
        if self.valid:
            text += f"; valid: {self.valid}"
        return text


@dataclass(frozen=True)
class ConfigWarning:
    """A setting that was accepted but will not do what its author may expect."""

    source: str
    line: int | None
    key: str
    message: str

    def __str__(self) -> str:
        where = self.source if self.line is None else f"{self.source}, line {self.line}"
        return f"{where}: {self.key}: {self.message}"


class InvalidSetting(ValueError):
    """A model invariant that failed, naming the field (and flow or cluster) at fault.

    Raised inside validators; loaders turn it into a located ``ConfigError``.
    """

    def __init__(
        self,
        message: str,
        *,
        field: str,
        valid: str | None = None,
        flow: int | None = None,
        cluster: str | None = None,
        subkey: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.valid = valid
        self.flow = flow
        self.cluster = cluster
        self.subkey = subkey


# ======================================================================================
# Models
# ======================================================================================
ALIAS_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
# The subset of Spark interval strings a trigger needs; Spark knows units by full name only.
_TRIGGER_INTERVAL = re.compile(r"(?:interval\s+)?(\d+)\s+(millisecond|second|minute|hour)s?", re.IGNORECASE)
_STARTING_OFFSETS = ("earliest", "latest")

ClientRole = Literal[
    "source_consumer", "source_producer", "source_admin", "target_consumer", "target_producer", "target_admin"
]
Feature = Literal[
    "refresh_topics",
    "refresh_groups",
    "sync_topic_configs",
    "emit_checkpoints",
    "sync_group_offsets",
    "emit_heartbeats",
]


def is_client_setting(key: str) -> bool:
    """True for the settings MM2 hands from a cluster (or top level) to every client of it."""
    return key == "security.protocol" or key.startswith(("ssl.", "sasl."))


def _trigger_seconds(text: str) -> float | None:
    match = _TRIGGER_INTERVAL.fullmatch(text.strip())
    if match is None:
        return None
    factor = {"millisecond": 0.001, "second": 1.0, "minute": 60.0, "hour": 3600.0}[match.group(2).lower()]
    return int(match.group(1)) * factor


class _Model(BaseModel):
    # Strict: a string "1" is not a number and "yes" is not a bool; loaders convert MM2's
    # string values themselves, by MM2's rules, before the model sees them.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class ClusterConfig(_Model):
    """One Kafka cluster: where to reach it and the client settings for talking to it.

    ``client`` holds settings MM2 gives every client of the cluster (``security.protocol``,
    ``ssl.*``, ``sasl.*``); ``consumer``/``producer``/``admin`` are ``A.consumer.*`` etc.
    ``mm2_only`` holds Connect worker settings used when MM2 runs (``A.offset.storage.*``…).
    """

    bootstrap_servers: list[str] = Field(min_length=1)
    client: dict[str, str] = Field(default_factory=dict)
    consumer: dict[str, str] = Field(default_factory=dict)
    producer: dict[str, str] = Field(default_factory=dict)
    admin: dict[str, str] = Field(default_factory=dict)
    mm2_only: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> ClusterConfig:
        for server in self.bootstrap_servers:
            if not server or any(c.isspace() or c == "," for c in server):
                raise InvalidSetting(
                    f"invalid bootstrap server {server!r}", field="bootstrap_servers", valid="host:port, host:port"
                )
        _check_client_settings(self.client, field="client")
        for name in ("consumer", "producer", "admin", "mm2_only"):
            _check_keys(getattr(self, name), field=name)
        return self


def _check_keys(settings: Mapping[str, str], *, field: str) -> None:
    for key in settings:
        if not key or key != key.strip():
            raise InvalidSetting(f"invalid setting name {key!r}", field=field, subkey=key)


def _check_client_settings(settings: Mapping[str, str], *, field: str) -> None:
    _check_keys(settings, field=field)
    for key, value in settings.items():
        if not is_client_setting(key):
            raise InvalidSetting(
                f"{key!r} is not a setting MirrorMaker 2 passes to all clients of a cluster",
                field=field,
                subkey=key,
                valid="security.protocol, ssl.*, sasl.* (other client settings go under consumer/producer/admin)",
            )
        if key == "security.protocol" and value.upper() not in SECURITY_PROTOCOLS:
            raise InvalidSetting(
                f"unknown security protocol {value!r}", field=field, subkey=key, valid=", ".join(SECURITY_PROTOCOLS)
            )


def _list_field(default: tuple[str, ...]) -> Any:
    return Field(default_factory=lambda: list(default))


class FlowConfig(_Model):
    """One replication flow ``source -> target`` with MM2's settings and defaults, plus ours.

    Intervals follow MM2: a negative interval disables the task, zero is invalid. Our knobs:
    ``mode``, ``max_offsets_per_trigger``, ``trigger_interval`` (Spark interval string;
    None means "0 seconds" for microbatch and "10 seconds" for realtime), ``starting_offsets``
    (None: the source consumer's ``auto.offset.reset``, else earliest as in MM2),
    ``checkpoint_dir``, ``provenance_header``. ``tasks_max`` is also ``num_streams``.
    """

    source: str
    target: str
    enabled: bool = True
    topics: list[str] = _list_field(DEFAULT_TOPICS)
    topics_exclude: list[str] = _list_field(DEFAULT_TOPICS_EXCLUDE)
    groups: list[str] = _list_field(DEFAULT_GROUPS)
    groups_exclude: list[str] = _list_field(DEFAULT_GROUPS_EXCLUDE)
    replication_policy_class: Literal["default", "identity"] = "default"
    replication_policy_separator: str = "."
    replication_policy_internal_topic_separator_enabled: bool = True
    sync_topic_configs_enabled: bool = True
    sync_topic_configs_interval_seconds: int = 600
    config_properties_exclude: list[str] = _list_field(DEFAULT_CONFIG_PROPERTIES_EXCLUDE)
    use_defaults_from: Literal["source", "target"] = "target"
    refresh_topics_enabled: bool = True
    refresh_topics_interval_seconds: int = 600
    refresh_groups_enabled: bool = True
    refresh_groups_interval_seconds: int = 600
    emit_checkpoints_enabled: bool = True
    emit_checkpoints_interval_seconds: int = 60
    sync_group_offsets_enabled: bool = False
    sync_group_offsets_interval_seconds: int = 60
    emit_heartbeats_enabled: bool = True
    emit_heartbeats_interval_seconds: int = 1
    heartbeats_replication_enabled: bool = True
    emit_offset_syncs_enabled: bool = True
    offset_syncs_topic_location: Literal["source", "target"] = "source"
    offset_lag_max: int = Field(100, ge=0)
    replication_factor: int = 2
    checkpoints_topic_replication_factor: int = 3
    heartbeats_topic_replication_factor: int = 3
    offset_syncs_topic_replication_factor: int = 3
    tasks_max: int = Field(1, ge=1)
    consumer_poll_timeout_ms: int = Field(1000, ge=0)
    admin_timeout_ms: int = Field(60000, ge=0)
    consumer: dict[str, str] = Field(default_factory=dict)
    producer: dict[str, str] = Field(default_factory=dict)
    admin: dict[str, str] = Field(default_factory=dict)
    mm2_only: dict[str, str] = Field(default_factory=dict)
    mode: Literal["microbatch", "realtime"] = "microbatch"
    max_offsets_per_trigger: int | None = Field(None, ge=1)
    trigger_interval: str | None = None
    starting_offsets: Literal["earliest", "latest"] | None = None
    checkpoint_dir: str | None = None
    provenance_header: bool = True

    @field_validator("replication_policy_class", mode="before")
    @classmethod
    def _policy_name(cls, value: Any) -> Any:
        if isinstance(value, str):
            short = POLICY_NAMES.get(value.strip())
            if short is None:
                raise InvalidSetting(
                    f"unsupported replication policy {value!r}",
                    field="replication_policy_class",
                    valid=", ".join(POLICY_NAMES),
                )
            return short
        return value

    @model_validator(mode="after")
    def _check_naming(self) -> FlowConfig:
        for name in ("source", "target"):
            alias = getattr(self, name)
            if not ALIAS_PATTERN.fullmatch(alias):
                raise InvalidSetting(
                    f"invalid cluster alias {alias!r}", field=name, valid="letters, digits, '.', '_', '-'"
                )
        if self.source == self.target:
            raise InvalidSetting(
                f"flow {self.name} replicates a cluster onto itself", field="target", valid="a different cluster"
            )
        sep = self.replication_policy_separator
        if not sep:
            raise InvalidSetting("the separator must not be empty", field="replication_policy_separator")
        for name in ("source", "target"):
            if sep in getattr(self, name):
                raise InvalidSetting(
                    f"cluster alias {getattr(self, name)!r} contains the separator {sep!r}, so remote topic "
                    "names could not be traced back to their source",
                    field="replication_policy_separator",
                    valid="a separator that appears in no cluster alias",
                )
        for name in ("topics", "topics_exclude", "groups", "groups_exclude", "config_properties_exclude"):
            _check_pattern_list(getattr(self, name), field=name)
        return self

    @model_validator(mode="after")
    def _check_mm2_settings(self) -> FlowConfig:
        for name in (
            "sync_topic_configs_interval_seconds",
            "refresh_topics_interval_seconds",
            "refresh_groups_interval_seconds",
            "emit_checkpoints_interval_seconds",
            "sync_group_offsets_interval_seconds",
            "emit_heartbeats_interval_seconds",
        ):
            if getattr(self, name) == 0:
                raise InvalidSetting(
                    "an interval of 0 seconds is invalid in MirrorMaker 2",
                    field=name,
                    valid="a positive number of seconds, or a negative one to disable",
                )
        for name in (
            "replication_factor",
            "checkpoints_topic_replication_factor",
            "heartbeats_topic_replication_factor",
            "offset_syncs_topic_replication_factor",
        ):
            value = getattr(self, name)
            if not (value == -1 or 1 <= value <= 32767):
                raise InvalidSetting(
                    f"invalid replication factor {value}", field=name, valid="1..32767, or -1 for the broker default"
                )
        if not self.emit_offset_syncs_enabled and (self.emit_checkpoints_enabled or self.sync_group_offsets_enabled):
            raise InvalidSetting(
                "checkpoints and group offset sync translate offsets through offset syncs, which are disabled",
                field="emit_offset_syncs_enabled",
                valid="true, or disable emit.checkpoints.enabled and sync.group.offsets.enabled",
            )
        if self.sync_group_offsets_enabled and not self.emit_checkpoints_enabled:
            raise InvalidSetting(
                "group offsets are synced from checkpoints, which are disabled (MM2's checkpoint connector "
                "refuses to start this way)",
                field="sync_group_offsets_enabled",
                valid="false, or emit.checkpoints.enabled = true",
            )
        for name in ("consumer", "producer", "admin", "mm2_only"):
            _check_keys(getattr(self, name), field=name)
        if "auto.offset.reset" in self.consumer:
            raise InvalidSetting(
                "the flow's start position is starting_offsets, not a consumer setting",
                field="consumer",
                subkey="auto.offset.reset",
                valid="starting_offsets = earliest | latest",
            )
        return self

    @model_validator(mode="after")
    def _check_spark_settings(self) -> FlowConfig:
        if self.mode == "realtime" and self.max_offsets_per_trigger is not None:
            raise InvalidSetting(
                "Spark's real-time mode does not batch by offsets; max_offsets_per_trigger needs microbatch mode",
                field="max_offsets_per_trigger",
                valid="unset, or mode = microbatch",
            )
        if self.trigger_interval is not None and _trigger_seconds(self.trigger_interval) is None:
            raise InvalidSetting(
                f"cannot read trigger interval {self.trigger_interval!r}",
                field="trigger_interval",
                valid="a Spark interval such as '500 milliseconds', '10 seconds', '5 minutes'",
            )
        if (
            self.mode == "realtime"
            and self.trigger_interval is not None
            and _trigger_seconds(self.trigger_interval) == 0
        ):
            raise InvalidSetting(
                "real-time mode needs a positive checkpoint interval",
                field="trigger_interval",
                valid="a positive interval such as '5 minutes'",
            )
        return self

    # -- derived views --------------------------------------------------------------
    @property
    def name(self) -> str:
        """``source->target``, as MM2 writes it."""
        return f"{self.source}->{self.target}"

    @property
    def num_streams(self) -> int:
        """Parallel Spark streams for this flow; MM2's ``tasks.max``."""
        return self.tasks_max

    @property
    def effective_trigger_interval(self) -> str:
        """The Spark trigger interval, with the mode's default when unset."""
        if self.trigger_interval is not None:
            return self.trigger_interval
        # Real-time mode commits offsets at each interval; after a crash it replays up to one
        # interval, so a short one keeps duplicates few (Spark's docs use minutes).
        return "10 seconds" if self.mode == "realtime" else "0 seconds"

    @property
    def trigger_interval_seconds(self) -> float:
        """``effective_trigger_interval`` in seconds."""
        seconds = _trigger_seconds(self.effective_trigger_interval)
        assert seconds is not None  # validated
        return seconds

    def schedule_seconds(self, feature: Feature) -> int | None:
        """Interval of a periodic task, or None when MM2 would not run it (flag off or negative)."""
        enabled = getattr(self, f"{feature}_enabled")
        interval = getattr(self, f"{feature}_interval_seconds")
        return interval if enabled and interval > 0 else None

    def replication_policy(self) -> DefaultReplicationPolicy:
        """The naming policy, configured with this flow's source alias as MM2 does."""
        return policy_from_name(
            self.replication_policy_class,
            self.replication_policy_separator,
            internal_topic_separator_enabled=self.replication_policy_internal_topic_separator_enabled,
            source_cluster_alias=self.source,
        )

    def topic_filter(self) -> TopicFilter:
        """``topics`` / ``topics.exclude``."""
        return TopicFilter(tuple(self.topics), tuple(self.topics_exclude))

    def group_filter(self) -> GroupFilter:
        """``groups`` / ``groups.exclude``."""
        return GroupFilter(tuple(self.groups), tuple(self.groups_exclude))

    def config_property_filter(self) -> ConfigPropertyFilter:
        """``config.properties.exclude`` / ``use.defaults.from``."""
        return ConfigPropertyFilter(tuple(self.config_properties_exclude), self.use_defaults_from)

    def topic_selector(self) -> TopicSelector:
        """The complete topic decision for this flow (filter, heartbeats, internal, cycles)."""
        return TopicSelector(
            self.source,
            self.target,
            self.topic_filter(),
            self.replication_policy(),
            self.heartbeats_replication_enabled,
        )


def _check_pattern_list(patterns: list[str], *, field: str) -> None:
    for pattern in patterns:
        if not pattern or pattern != pattern.strip() or "," in pattern:
            # MM2 splits lists on commas and trims, so such an element cannot survive a
            # round trip through its properties file.
            raise InvalidSetting(
                f"list element {pattern!r} is empty, padded, or contains ','",
                field=field,
                valid="non-empty regexes without commas",
            )
        try:
            re.compile(pattern)
        except re.error as exc:
            raise InvalidSetting(
                f"invalid regex {pattern!r}: {exc}", field=field, valid="a Java/Python regex"
            ) from None


class ReplicatorConfig(_Model):
    """Clusters by alias, the flows between them, and process-wide settings.

    ``client`` holds top-level ``security.protocol``/``ssl.*``/``sasl.*`` (every cluster's
    clients, unless the cluster sets its own). ``spark_master`` is per process, as one Spark
    session runs all flows. ``checkpoint_dir`` is the base of each flow's checkpoint folder.
    ``warnings`` lists accepted-but-ignored settings; it is not part of the configuration's
    value (excluded from dumps; compare configurations with ``model_dump()``).
    """

    clusters: dict[str, ClusterConfig] = Field(min_length=1)
    flows: list[FlowConfig] = Field(default_factory=list)
    client: dict[str, str] = Field(default_factory=dict)
    spark_master: str = "local[*]"
    checkpoint_dir: str | None = None
    mm2_only: dict[str, str] = Field(default_factory=dict)
    warnings: list[ConfigWarning] = Field(default_factory=list, exclude=True, repr=False)

    @model_validator(mode="after")
    def _check(self) -> ReplicatorConfig:
        for alias in self.clusters:
            if not ALIAS_PATTERN.fullmatch(alias):
                raise InvalidSetting(
                    f"invalid cluster alias {alias!r}",
                    field="alias",
                    cluster=alias,
                    valid="letters, digits, '.', '_', '-'",
                )
        _check_client_settings(self.client, field="client")
        _check_keys(self.mm2_only, field="mm2_only")
        if not self.spark_master.strip():
            raise InvalidSetting("spark_master must not be empty", field="spark_master", valid="e.g. local[*]")
        seen: dict[tuple[str, str], int] = {}
        for index, flow in enumerate(self.flows):
            for end in ("source", "target"):
                alias = getattr(flow, end)
                if alias not in self.clusters:
                    raise InvalidSetting(
                        f"flow {flow.name} names cluster {alias!r}, which is not declared",
                        field=end,
                        flow=index,
                        valid="one of " + ", ".join(self.clusters),
                    )
            if (flow.source, flow.target) in seen:
                raise InvalidSetting(f"flow {flow.name} is declared twice", field="target", flow=index)
            seen[(flow.source, flow.target)] = index
            for alias in self.clusters:
                if flow.replication_policy_separator in alias:
                    raise InvalidSetting(
                        f"cluster alias {alias!r} contains the separator {flow.replication_policy_separator!r}, "
                        "so remote topic names could not be traced back to their source",
                        field="replication_policy_separator",
                        flow=index,
                        valid="a separator that appears in no cluster alias",
                    )
            self._check_start_position(index, flow)
        self._check_identity_cycles()
        self._check_checkpoint_dirs()
        return self

    def _check_start_position(self, index: int, flow: FlowConfig) -> None:
        reset = self.clusters[flow.source].consumer.get("auto.offset.reset")
        if reset is None:
            return
        if reset not in _STARTING_OFFSETS:
            raise InvalidSetting(
                f"auto.offset.reset = {reset!r} has no Spark equivalent",
                field="consumer",
                cluster=flow.source,
                subkey="auto.offset.reset",
                valid="earliest, latest",
            )
        if flow.starting_offsets is not None and flow.starting_offsets != reset:
            # In MM2 the cluster's consumer setting beats the flow's; we refuse to guess.
            raise InvalidSetting(
                f"flow {flow.name} starts at {flow.starting_offsets!r} but cluster {flow.source!r} sets "
                f"consumer auto.offset.reset = {reset!r}, which MirrorMaker 2 would use instead",
                field="starting_offsets",
                flow=index,
                valid=f"{reset!r}, or remove {flow.source}.consumer.auto.offset.reset",
            )

    def _check_identity_cycles(self) -> None:
        enabled = [(i, f) for i, f in enumerate(self.flows) if f.enabled]
        reach: dict[str, set[str]] = {alias: {alias} for alias in self.clusters}
        changed = True
        while changed:  # transitive closure; clusters are few
            changed = False
            for _, flow in enabled:
                for reached in reach.values():
                    if flow.source in reached and flow.target not in reached:
                        reached.add(flow.target)
                        changed = True

        def same_component(a: str, b: str) -> bool:
            return b in reach[a] and a in reach[b]

        for _, flow in enabled:
            if flow.replication_policy_class != "identity" or not same_component(flow.source, flow.target):
                continue
            # Every flow of this strongly connected component can carry a record back, and
            # identity names cannot show it: every hop must stamp the provenance header.
            for index, other in enabled:
                on_cycle = same_component(other.source, flow.source) and same_component(other.target, flow.source)
                if on_cycle and not other.provenance_header:
                    raise InvalidSetting(
                        f"flow {other.name} is on a replication cycle with {flow.name}, which uses the identity "
                        "policy; names cannot stop records from looping, so every flow on the cycle must add "
                        "the provenance header",
                        field="provenance_header",
                        flow=index,
                        valid="true (or the default replication policy)",
                    )

    def _check_checkpoint_dirs(self) -> None:
        owners: dict[str, str] = {}
        for index, flow in enumerate(self.flows):
            path = self.flow_checkpoint_dir(flow)
            if path is None or not flow.enabled:
                continue
            if path in owners:
                raise InvalidSetting(
                    f"flows {owners[path]} and {flow.name} share checkpoint directory {path!r}",
                    field="checkpoint_dir",
                    flow=index,
                    valid="a directory per flow",
                )
            owners[path] = flow.name

    # -- lookups --------------------------------------------------------------------
    def flow(self, source: str, target: str) -> FlowConfig:
        """The flow ``source->target``; KeyError when it is not declared."""
        for flow in self.flows:
            if flow.source == source and flow.target == target:
                return flow
        raise KeyError(f"{source}->{target}")

    def enabled_flows(self) -> list[FlowConfig]:
        """Flows that replicate (``A->B.enabled = true``)."""
        return [flow for flow in self.flows if flow.enabled]

    def flow_checkpoint_dir(self, flow: FlowConfig) -> str | None:
        """The flow's own checkpoint dir, else ``<checkpoint_dir>/<source>__<target>``, else None."""
        if flow.checkpoint_dir is not None:
            return flow.checkpoint_dir
        if self.checkpoint_dir is None:
            return None
        return str(Path(self.checkpoint_dir) / f"{flow.source}__{flow.target}")

    def starting_offsets(self, flow: FlowConfig) -> Literal["earliest", "latest"]:
        """Where the flow starts without a checkpoint: its setting, the consumer's, else earliest."""
        if flow.starting_offsets is not None:
            return flow.starting_offsets
        reset = self.clusters[flow.source].consumer.get("auto.offset.reset", "earliest")
        return "latest" if reset == "latest" else "earliest"

    def client_config(self, flow: FlowConfig, role: ClientRole) -> dict[str, str]:
        """Effective client settings for one client of a flow, layered as MM2 layers them.

        Lowest to highest: the flow's ``consumer``/``producer``/``admin``, then top-level
        ``client``, the cluster's ``client`` and ``bootstrap.servers``, then the cluster's
        ``consumer``/``producer``/``admin`` (in MM2 ``A.consumer.*`` beats ``A->B.consumer.*``).
        Consumers get ``enable.auto.commit=false`` as MM2 forces it.
        """
        side, kind = role.split("_")
        cluster = self.clusters[flow.source if side == "source" else flow.target]
        settings: dict[str, str] = dict(getattr(flow, kind))
        settings.update(self.client)
        settings.update(cluster.client)
        settings["bootstrap.servers"] = ",".join(cluster.bootstrap_servers)
        settings.update(getattr(cluster, kind))
        if kind == "consumer":
            settings["enable.auto.commit"] = "false"
            if side == "source":
                settings["auto.offset.reset"] = self.starting_offsets(flow)
            else:
                settings.setdefault("auto.offset.reset", "earliest")
        return settings


# ======================================================================================
# Key registry: properties names <-> model fields
# ======================================================================================
MIRRORDRILL_PREFIX = "mirrordrill."

FLOW_PROPERTY_KEYS: dict[str, str] = {
    "enabled": "enabled",
    "topics": "topics",
    "topics.exclude": "topics_exclude",
    "groups": "groups",
    "groups.exclude": "groups_exclude",
    "replication.policy.class": "replication_policy_class",
    "replication.policy.separator": "replication_policy_separator",
    "replication.policy.internal.topic.separator.enabled": "replication_policy_internal_topic_separator_enabled",
    "sync.topic.configs.enabled": "sync_topic_configs_enabled",
    "sync.topic.configs.interval.seconds": "sync_topic_configs_interval_seconds",
    "config.properties.exclude": "config_properties_exclude",
    "use.defaults.from": "use_defaults_from",
    "refresh.topics.enabled": "refresh_topics_enabled",
    "refresh.topics.interval.seconds": "refresh_topics_interval_seconds",
    "refresh.groups.enabled": "refresh_groups_enabled",
    "refresh.groups.interval.seconds": "refresh_groups_interval_seconds",
    "emit.checkpoints.enabled": "emit_checkpoints_enabled",
    "emit.checkpoints.interval.seconds": "emit_checkpoints_interval_seconds",
    "sync.group.offsets.enabled": "sync_group_offsets_enabled",
    "sync.group.offsets.interval.seconds": "sync_group_offsets_interval_seconds",
    "emit.heartbeats.enabled": "emit_heartbeats_enabled",
    "emit.heartbeats.interval.seconds": "emit_heartbeats_interval_seconds",
    "heartbeats.replication.enabled": "heartbeats_replication_enabled",
    "emit.offset-syncs.enabled": "emit_offset_syncs_enabled",
    "offset-syncs.topic.location": "offset_syncs_topic_location",
    "offset.lag.max": "offset_lag_max",
    "replication.factor": "replication_factor",
    "checkpoints.topic.replication.factor": "checkpoints_topic_replication_factor",
    "heartbeats.topic.replication.factor": "heartbeats_topic_replication_factor",
    "offset-syncs.topic.replication.factor": "offset_syncs_topic_replication_factor",
    "tasks.max": "tasks_max",
    "consumer.poll.timeout.ms": "consumer_poll_timeout_ms",
    "admin.timeout.ms": "admin_timeout_ms",
    "mirrordrill.mode": "mode",
    "mirrordrill.max.offsets.per.trigger": "max_offsets_per_trigger",
    "mirrordrill.trigger.interval": "trigger_interval",
    "mirrordrill.provenance.header": "provenance_header",
    "mirrordrill.checkpoint.dir": "checkpoint_dir",
}
"""Every per-flow key we honour, by its properties name; top-level keys are flow defaults."""

# Top-level meanings that differ from the per-flow ones.
GLOBAL_PROPERTY_KEYS: dict[str, str] = {
    "mirrordrill.spark.master": "spark_master",
    "mirrordrill.checkpoint.dir": "checkpoint_dir",
}
_NOT_DEFAULTS = {"enabled", "checkpoint_dir"}  # flow fields that top-level keys cannot default
_FLOW_DICTS = ("consumer", "producer", "admin")

# Connect worker settings: MM2 builds one worker per target cluster from them.
_WORKER_KEYS = (
    "offset.storage.",
    "config.storage.",
    "status.storage.",
    "offset.flush.",
    "task.",
    "worker.",
    "config.providers",
    "dedicated.mode.enable.internal.rest",
    "listeners",
    "rest.",
    "admin.listeners",
    "inter.worker.",
    "exactly.once.source.support",
    "scheduled.rebalance.max.delay.ms",
    "connect.protocol",
    "group.id",
    "client.id",
    "session.timeout.ms",
    "heartbeat.interval.ms",
    "rebalance.timeout.ms",
    "worker.sync.timeout.ms",
    "metrics.",
    "metric.reporters",
    "auto.include.jmx.reporter",
    "plugin.path",
    "plugin.discovery",
    "access.control.",
    "response.http.headers.config",
    "topic.creation.enable",
    "connector.client.config.override.policy",
    "key.converter.",
    "value.converter.",
    "header.converter.",
)
# Connector settings MM2 honours and our replicator does not implement.
_CONNECTOR_MM2_ONLY = (
    "sync.topic.acls.enabled",
    "sync.topic.acls.interval.seconds",
    "config.action.reload",
    "tasks.max.enforce",
    "errors.",
    "exactly.once.support",
    "transaction.boundary",
    "offsets.storage.topic",
    "metric.reporters",
    "key.converter.",
    "value.converter.",
    "header.converter.",
)
# Concrete names behind the prefixes above, only to suggest corrections for typos.
_MM2_ONLY_EXAMPLES = (
    *(
        f"{store}.storage.{suffix}"
        for store in ("offset", "config", "status")
        for suffix in ("topic", "replication.factor")
    ),
    "exactly.once.source.support",
    "dedicated.mode.enable.internal.rest",
    "listeners",
    "sync.topic.acls.enabled",
)
_BYTE_ARRAY_CONVERTER = "org.apache.kafka.connect.converters.ByteArrayConverter"
_DEFAULT_ONLY: dict[str, str] = {
    "key.converter": _BYTE_ARRAY_CONVERTER,
    "value.converter": _BYTE_ARRAY_CONVERTER,
    "header.converter": _BYTE_ARRAY_CONVERTER,
    "topic.filter.class": "org.apache.kafka.connect.mirror.DefaultTopicFilter",
    "group.filter.class": "org.apache.kafka.connect.mirror.DefaultGroupFilter",
    "config.property.filter.class": "org.apache.kafka.connect.mirror.DefaultConfigPropertyFilter",
    "forwarding.admin.class": "org.apache.kafka.clients.admin.ForwardingAdmin",
}
_REJECTED: dict[str, str] = {
    "transforms": "Connect transforms change records; the mirrordrill replicator copies them unchanged",
    "predicates": "Connect predicates only serve transforms, which are not supported",
    "name": "MirrorMaker 2 names its connectors itself",
    "connector.class": "MirrorMaker 2 chooses its connector classes itself",
    "source.cluster.alias": "MirrorMaker 2 sets this from the flow; use A->B.<key>",
    "target.cluster.alias": "MirrorMaker 2 sets this from the flow; use A->B.<key>",
    "task.assigned.partitions": "internal to MirrorMaker 2",
    "task.assigned.groups": "internal to MirrorMaker 2",
    "task.index": "internal to MirrorMaker 2",
    "topics.blacklist": "removed in Kafka 4.0; use topics.exclude",
    "topics.whitelist": "removed; use topics",
    "groups.blacklist": "removed in Kafka 4.0; use groups.exclude",
    "groups.whitelist": "removed; use groups",
    "config.properties.blacklist": "removed in Kafka 4.0; use config.properties.exclude",
}
_REGEX_FIELDS = {"topics", "topics_exclude", "groups", "groups_exclude", "config_properties_exclude"}


def _matches_any(key: str, names: Iterable[str]) -> bool:
    for name in names:
        if name.endswith("."):
            if key.startswith(name):
                return True
        elif key == name or key.startswith(name + "."):
            return True
    return False


def _rejected_reason(key: str) -> str | None:
    for name, reason in _REJECTED.items():
        if key == name or (name in ("transforms", "predicates") and key.startswith(name + ".")):
            return reason
    return None


# ======================================================================================
# Draft: settings with where they came from, before they become models
# ======================================================================================
@dataclass(frozen=True)
class _Loc:
    key: str
    line: int | None


@dataclass
class _Setting:
    value: Any
    loc: _Loc


@dataclass
class _ClusterDraft:
    loc: _Loc
    fields: dict[str, _Setting] = field(default_factory=dict)
    dicts: dict[str, dict[str, _Setting]] = field(
        default_factory=lambda: {name: {} for name in ("client", *_FLOW_DICTS, "mm2_only")}
    )


@dataclass
class _FlowDraft:
    source: str
    target: str
    loc: _Loc
    index: int
    end_locs: dict[str, _Loc] = field(default_factory=dict)
    fields: dict[str, _Setting] = field(default_factory=dict)
    dicts: dict[str, dict[str, _Setting]] = field(
        default_factory=lambda: {name: {} for name in (*_FLOW_DICTS, "mm2_only")}
    )


@dataclass
class _Draft:
    source: str
    clusters_loc: _Loc
    style: Literal["properties", "yaml"]
    clusters: dict[str, _ClusterDraft] = field(default_factory=dict)
    flows: list[_FlowDraft] = field(default_factory=list)
    defaults: dict[str, _Setting] = field(default_factory=dict)
    default_dicts: dict[str, dict[str, _Setting]] = field(
        default_factory=lambda: {name: {} for name in (*_FLOW_DICTS, "mm2_only")}
    )
    globals: dict[str, _Setting] = field(default_factory=dict)
    client: dict[str, _Setting] = field(default_factory=dict)
    mm2_only: dict[str, _Setting] = field(default_factory=dict)
    warnings: list[ConfigWarning] = field(default_factory=list)

    def error(self, problem: str, loc: _Loc | None, **kwargs: Any) -> ConfigError:
        return ConfigError(
            problem, source=self.source, line=loc.line if loc else None, key=loc.key if loc else None, **kwargs
        )

    def warn(self, loc: _Loc, message: str) -> None:
        self.warnings.append(ConfigWarning(self.source, loc.line, loc.key, message))

    def flow_draft(self, source: str, target: str, loc: _Loc) -> _FlowDraft:
        for draft in self.flows:
            if draft.source == source and draft.target == target:
                return draft
        draft = _FlowDraft(source, target, loc, len(self.flows))
        self.flows.append(draft)
        return draft

    def cluster_key(self, alias: str, name: str | None, sub: str | None) -> str:
        """How the file would spell a cluster setting, for settings it does not contain."""
        if self.style == "yaml":
            return ".".join(part for part in ("clusters", alias, name, sub) if part and part != "alias")
        if name == "bootstrap_servers":
            return f"{alias}.bootstrap.servers"
        if name in _FLOW_DICTS and sub:
            return f"{alias}.{name}.{sub}"
        if name in ("client", "mm2_only") and sub:
            return f"{alias}.{sub}"
        return "clusters"

    def flow_key(self, flow: _FlowDraft, name: str | None, sub: str | None) -> str:
        """How the file would spell a flow setting, for settings it does not contain."""
        if self.style == "yaml":
            return ".".join(part for part in (f"flows[{flow.index}]", name, sub) if part)
        prefix = f"{flow.source}->{flow.target}."
        if name in _PROPERTY_NAME_OF:
            return prefix + _PROPERTY_NAME_OF[name]
        if name == "starting_offsets":
            return prefix + "consumer.auto.offset.reset"
        if name in _FLOW_DICTS and sub:
            return f"{prefix}{name}.{sub}"
        if name == "mm2_only" and sub:
            return prefix + sub
        return flow.loc.key


# ======================================================================================
# Java properties syntax
# ======================================================================================
@dataclass(frozen=True)
class PropertyLine:
    """One ``key=value`` of a properties file, unescaped, with the line it starts on."""

    key: str
    value: str
    line: int
    raw: str = ""
    dropped_escapes: tuple[str, ...] = ()


_WHITESPACE = " \t\f"
_KNOWN_ESCAPES = "tnrfu"


def _odd_trailing_backslashes(text: str) -> bool:
    count = len(text) - len(text.rstrip("\\"))
    return count % 2 == 1


def _unescape(text: str, *, source: str, line: int) -> tuple[str, tuple[str, ...]]:
    out: list[str] = []
    dropped: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "\\":
            out.append(char)
            i += 1
            continue
        if i + 1 >= len(text):
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise ConfigError(
                    "malformed \\uxxxx escape", source=source, line=line, key=text, valid="\\u followed by 4 hex digits"
                )
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(nxt, nxt))
        if nxt not in _KNOWN_ESCAPES and nxt not in "\\=:#! ":
            dropped.append("\\" + nxt)
        i += 2
    return "".join(out), tuple(dropped)


def read_properties(text: str, source_name: str = "<properties>") -> list[PropertyLine]:
    """Read Java ``.properties`` text as ``java.util.Properties.load`` does, keeping line numbers.

    Handles ``#``/``!`` comments, ``=``/``:``/whitespace separators, backslash line
    continuations and escapes. There are no end-of-line comments in this format.
    """
    lines = re.split(r"\r\n|\r|\n", text)
    result: list[PropertyLine] = []
    index = 0
    while index < len(lines):
        first = lines[index].lstrip(_WHITESPACE)
        start = index + 1
        index += 1
        if not first or first[0] in "#!":
            continue
        logical = first
        while _odd_trailing_backslashes(logical):
            logical = logical[:-1]
            if index >= len(lines):
                break
            logical += lines[index].lstrip(_WHITESPACE)
            index += 1
        raw_key, raw_value = _split_key_value(logical)
        key, _ = _unescape(raw_key, source=source_name, line=start)
        value, dropped = _unescape(raw_value, source=source_name, line=start)
        result.append(PropertyLine(key, value, start, logical, dropped))
    return result


def _split_key_value(logical: str) -> tuple[str, str]:
    key_end = len(logical)
    value_start = len(logical)
    has_separator = False
    escaped = False
    for pos, char in enumerate(logical):
        if not escaped and char in "=:":
            key_end, value_start, has_separator = pos, pos + 1, True
            break
        if not escaped and char in _WHITESPACE:
            key_end, value_start = pos, pos + 1
            break
        escaped = (not escaped) if char == "\\" else False
    while value_start < len(logical):
        char = logical[value_start]
        if char in _WHITESPACE:
            value_start += 1
        elif not has_separator and char in "=:":
            has_separator = True
            value_start += 1
        else:
            break
    return logical[:key_end], logical[value_start:]


def parse_mm2_list(value: str) -> list[str]:
    """A list value as Kafka's ConfigDef reads it: trimmed, split on commas, blank means empty."""
    trimmed = value.strip()
    if not trimmed:
        return []
    return re.split(r"\s*,\s*", trimmed)


# ======================================================================================
# Properties -> draft
# ======================================================================================
def _unwrap_optional(annotation: Any) -> Any:
    if get_origin(annotation) in (Union, types.UnionType):
        args = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def _field_annotation(model: type[BaseModel], name: str) -> Any:
    return _unwrap_optional(model.model_fields[name].annotation)


def _from_text(annotation: Any, raw: str) -> Any:
    """Convert a properties string to the field's type by Kafka ConfigDef rules."""
    text = raw.strip()
    if annotation is bool:
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise ValueError("expected true or false")
    if annotation is int:
        if re.fullmatch(r"[+-]?\d+", text):
            return int(text)
        raise ValueError("expected a whole number")
    if get_origin(annotation) is list:
        return parse_mm2_list(text)
    return text


_SETTING_VALUE_HINT = re.compile(r"\s[#!]")


class _PropertiesReader:
    """Sorts the lines of an MM2 properties file into a draft."""

    def __init__(self, text: str, source: str) -> None:
        self.source = source
        self.lines = read_properties(text, source)
        self.aliases: list[str] = []
        self.draft: _Draft  # set by read(), which every other method runs under

    def read(self) -> _Draft:
        by_key: dict[str, PropertyLine] = {}
        early_warnings: list[ConfigWarning] = []
        for prop in self.lines:
            if prop.key in by_key:
                early_warnings.append(
                    ConfigWarning(
                        self.source, prop.line, prop.key, f"repeats line {by_key[prop.key].line}; this later value wins"
                    )
                )
            by_key[prop.key] = prop
        clusters = by_key.get("clusters")
        if clusters is None:
            raise ConfigError(
                "no 'clusters' key: MirrorMaker 2 needs the list of cluster aliases",
                source=self.source,
                key="clusters",
                valid="clusters = A, B",
            )
        draft = _Draft(self.source, _Loc("clusters", clusters.line), "properties")
        draft.warnings.extend(early_warnings)
        self.draft = draft
        self._read_clusters(clusters)
        for prop in sorted(by_key.values(), key=lambda p: p.line):
            if prop.key == "clusters":
                continue
            loc = _Loc(prop.key, prop.line)
            self._hint(prop, loc)
            self._classify(prop, loc)
        for flow in draft.flows:
            # MM2 replicates a pair only when A->B.enabled = true.
            flow.fields.setdefault(
                "enabled", _Setting(False, _Loc(f"{flow.source}->{flow.target}.enabled", flow.loc.line))
            )
        return draft

    def _read_clusters(self, prop: PropertyLine) -> None:
        loc = _Loc(prop.key, prop.line)
        aliases = parse_mm2_list(prop.value)
        if not aliases:
            raise self.draft.error("no cluster aliases", loc, valid="clusters = A, B")
        for alias in aliases:
            if not ALIAS_PATTERN.fullmatch(alias):
                hint = " (properties files have no end-of-line comments)" if "#" in alias else ""
                raise self.draft.error(
                    f"invalid cluster alias {alias!r}{hint}", loc, valid="aliases of letters, digits, '.', '_', '-'"
                )
            if alias in self.draft.clusters:
                raise self.draft.error(f"cluster alias {alias!r} is listed twice", loc, valid="distinct aliases")
            self.draft.clusters[alias] = _ClusterDraft(loc)
        # Longest first, so alias "us" never captures keys of alias "us.east".
        self.aliases = sorted(aliases, key=len, reverse=True)

    def _hint(self, prop: PropertyLine, loc: _Loc) -> None:
        if _SETTING_VALUE_HINT.search(prop.value):
            self.draft.warn(
                loc, "properties files have no end-of-line comments; the '#' or '!' text is part of the value"
            )
        if prop.dropped_escapes:
            dropped = ", ".join(sorted(set(prop.dropped_escapes)))
            self.draft.warn(
                loc,
                f"Java properties syntax drops the backslash of {dropped}; MirrorMaker 2 sees the value "
                f"{prop.value!r}. Write a double backslash to keep a regex escape",
            )
        if not prop.raw.isascii():
            self.draft.warn(
                loc, "MirrorMaker 2 reads properties files as ISO-8859-1; write non-ASCII characters as \\uXXXX"
            )

    # -- classification -------------------------------------------------------------
    def _classify(self, prop: PropertyLine, loc: _Loc) -> None:
        key = prop.key
        if "->" in key:
            self._flow_key(prop, loc)
            return
        alias = next((a for a in self.aliases if key.startswith(a + ".")), None)
        rest = key[len(alias) + 1 :] if alias is not None else ""
        if alias is not None and _is_cluster_setting(rest):
            self._cluster_key(alias, rest, prop, loc)
        elif self._is_top_level_key(key):
            self._top_level_key(prop, loc)
        elif alias is not None:
            self._cluster_key(alias, rest, prop, loc)
        else:
            self._unknown_top_level(prop, loc)

    def _is_top_level_key(self, key: str) -> bool:
        return (
            key in FLOW_PROPERTY_KEYS
            or key in GLOBAL_PROPERTY_KEYS
            or key in _DEFAULT_ONLY
            or is_client_setting(key)
            or _rejected_reason(key) is not None
            or key in ("bootstrap.servers",)
            or key.startswith(("consumer.", "producer.", "admin.", MIRRORDRILL_PREFIX))
            or _matches_any(key, _WORKER_KEYS)
            or _matches_any(key, _CONNECTOR_MM2_ONLY)
        )

    def _convert(self, model: type[BaseModel], name: str, prop: PropertyLine, loc: _Loc) -> Any:
        if name == "replication_policy_class":
            return prop.value.strip()
        try:
            return _from_text(_field_annotation(model, name), prop.value)
        except ValueError as exc:
            raise self.draft.error(f"{exc}, got {prop.value.strip()!r}", loc) from None

    def _top_level_key(self, prop: PropertyLine, loc: _Loc) -> None:
        draft, key = self.draft, prop.key
        reason = _rejected_reason(key)
        if key == "enabled":
            raise draft.error(
                "a top-level 'enabled' would switch on every pair of clusters; enable flows one by one",
                loc,
                valid="A->B.enabled = true",
            )
        if reason is not None:
            raise draft.error(f"not supported: {reason}", loc)
        if key == "bootstrap.servers":
            raise draft.error(
                "a top-level bootstrap.servers would give every cluster the same brokers",
                loc,
                valid=", ".join(f"{a}.bootstrap.servers" for a in draft.clusters),
            )
        if key in GLOBAL_PROPERTY_KEYS:
            name = GLOBAL_PROPERTY_KEYS[key]
            draft.globals[name] = _Setting(self._convert(ReplicatorConfig, name, prop, loc), loc)
            return
        if key in FLOW_PROPERTY_KEYS:
            name = FLOW_PROPERTY_KEYS[key]
            draft.defaults[name] = _Setting(self._convert(FlowConfig, name, prop, loc), loc)
            return
        if key in _DEFAULT_ONLY:
            self._default_only(prop, loc)
            return
        if is_client_setting(key):
            draft.client[key] = _Setting(prop.value.strip(), loc)
            return
        if _matches_any(key, _WORKER_KEYS) or _matches_any(key, _CONNECTOR_MM2_ONLY):
            draft.mm2_only[key] = _Setting(prop.value.strip(), loc)
            draft.warn(loc, _mm2_only_message(key))
            return
        if key.startswith(("consumer.", "producer.", "admin.")):
            kind, rest = key.split(".", 1)
            raise draft.error(
                f"MirrorMaker 2 silently ignores top-level {kind}.* settings",
                loc,
                valid=f"<cluster>.{kind}.{rest} or <source>-><target>.{kind}.{rest}",
            )
        self._unknown_top_level(prop, loc)

    def _default_only(self, prop: PropertyLine, loc: _Loc) -> None:
        expected = _DEFAULT_ONLY[prop.key]
        if prop.value.strip() != expected:
            raise self.draft.error(
                f"{prop.value.strip()!r} is not supported: the mirrordrill replicator cannot load Java classes "
                "and copies records as raw bytes",
                loc,
                valid=expected,
            )

    def _unknown_top_level(self, prop: PropertyLine, loc: _Loc) -> None:
        key = prop.key
        head, _, rest = key.partition(".")
        if rest and _is_cluster_setting(rest):
            raise self.draft.error(
                f"cluster {head!r} is not in clusters = {', '.join(self.draft.clusters)}",
                loc,
                suggestions=[f"{a}.{rest}" for a in difflib.get_close_matches(head, list(self.draft.clusters), n=2)],
                valid="add it to 'clusters', or use one of " + ", ".join(self.draft.clusters),
            )
        candidates = [*FLOW_PROPERTY_KEYS, *GLOBAL_PROPERTY_KEYS, *_MM2_ONLY_EXAMPLES, "clusters", "security.protocol"]
        candidates += [f"{alias}.bootstrap.servers" for alias in self.draft.clusters]
        raise self.draft.error(
            "unknown key",
            loc,
            suggestions=difflib.get_close_matches(key, candidates, n=3, cutoff=0.6),
            valid="MirrorMaker 2 settings (topics, groups, replication.factor, …), <cluster>.bootstrap.servers, "
            "<cluster>.consumer.*/producer.*/admin.*, <source>-><target>.<setting>, mirrordrill.*",
        )

    def _cluster_key(self, alias: str, rest: str, prop: PropertyLine, loc: _Loc) -> None:
        draft = self.draft
        cluster = draft.clusters[alias]
        value = prop.value.strip()
        if rest == "bootstrap.servers":
            cluster.fields["bootstrap_servers"] = _Setting(parse_mm2_list(value), loc)
            return
        if is_client_setting(rest):
            cluster.dicts["client"][rest] = _Setting(value, loc)
            return
        head, _, sub = rest.partition(".")
        if head in _FLOW_DICTS and rest not in ("admin.listeners",):
            if not sub:
                raise draft.error(f"missing the {head} setting name", loc, valid=f"{alias}.{head}.<setting>")
            cluster.dicts[head][sub] = _Setting(value, loc)
            return
        if rest in _DEFAULT_ONLY and rest.endswith("converter"):
            self._default_only(PropertyLine(rest, prop.value, prop.line, prop.raw), loc)
            return
        if _matches_any(rest, _WORKER_KEYS):
            cluster.dicts["mm2_only"][rest] = _Setting(value, loc)
            draft.warn(loc, _mm2_only_message(rest))
            return
        candidates = [f"{alias}.{name}" for name in ("bootstrap.servers", "security.protocol")]
        candidates += [f"{alias}.{kind}.{sub or rest}" for kind in _FLOW_DICTS]
        flow_like = [f"{alias}->{t}.{rest}" for t in draft.clusters if t != alias and rest in FLOW_PROPERTY_KEYS]
        raise draft.error(
            f"MirrorMaker 2 passes only bootstrap.servers, security.protocol, ssl.* and sasl.* from "
            f"'{alias}.<setting>' to its clients, and {rest!r} is no Connect worker setting",
            loc,
            suggestions=difflib.get_close_matches(prop.key, candidates, n=3, cutoff=0.6) + flow_like[:2],
            valid=f"{alias}.consumer.{rest}, {alias}.producer.{rest} or {alias}.admin.{rest} for a client setting",
        )

    def _flow_key(self, prop: PropertyLine, loc: _Loc) -> None:
        draft = self.draft
        source, _, rest = prop.key.partition("->")
        if source not in draft.clusters:
            raise draft.error(
                f"cluster {source!r} is not in clusters = {', '.join(draft.clusters)}",
                loc,
                suggestions=difflib.get_close_matches(source, list(draft.clusters), n=2),
                valid="add it to 'clusters', or use one of " + ", ".join(draft.clusters),
            )
        target = next((alias for alias in self.aliases if rest.startswith(alias + ".")), None)
        if target is None:
            guess = rest.split(".", 1)[0]
            if guess in draft.clusters:
                raise draft.error("missing the setting name", loc, valid=f"{source}->{guess}.enabled = true")
            raise draft.error(
                f"cluster {guess!r} is not in clusters = {', '.join(draft.clusters)}",
                loc,
                suggestions=difflib.get_close_matches(guess, list(draft.clusters), n=2),
                valid="add it to 'clusters', or use one of " + ", ".join(draft.clusters),
            )
        setting = rest[len(target) + 1 :]
        flow = draft.flow_draft(source, target, loc)
        prefix = f"{source}->{target}."
        value = prop.value.strip()
        if setting in FLOW_PROPERTY_KEYS:
            name = FLOW_PROPERTY_KEYS[setting]
            flow.fields[name] = _Setting(self._convert(FlowConfig, name, prop, loc), loc)
            return
        if setting == "mirrordrill.starting.offsets":
            raise draft.error(
                "the start position is written the MirrorMaker 2 way, so that MM2 starts at the same place",
                loc,
                valid=f"{prefix}consumer.auto.offset.reset = earliest | latest",
            )
        if setting == "mirrordrill.spark.master":
            raise draft.error(
                "one Spark session runs every flow, so the master is set once", loc, valid="mirrordrill.spark.master"
            )
        reason = _rejected_reason(setting)
        if reason is not None:
            raise draft.error(f"not supported: {reason}", loc)
        if setting in _DEFAULT_ONLY:
            self._default_only(PropertyLine(setting, prop.value, prop.line, prop.raw), loc)
            return
        head, _, sub = setting.partition(".")
        if head in _FLOW_DICTS:
            if not sub:
                raise draft.error(f"missing the {head} setting name", loc, valid=f"{prefix}{head}.<setting>")
            flow.dicts[head][sub] = _Setting(value, loc)
            return
        if head in ("source", "target") and sub.split(".", 1)[0] in (*_FLOW_DICTS, "cluster"):
            cluster = source if head == "source" else target
            raise draft.error(
                f"per-flow {head}.* client overrides are not supported",
                loc,
                valid=f"{cluster}.consumer.*/producer.*/admin.* (the cluster's clients) "
                f"or {prefix}consumer.* (this flow's)",
            )
        if is_client_setting(setting):
            raise draft.error(
                "security settings belong to a cluster, not a flow",
                loc,
                valid=f"{source}.{setting} and {target}.{setting}",
            )
        if _matches_any(setting, _CONNECTOR_MM2_ONLY):
            flow.dicts["mm2_only"][setting] = _Setting(value, loc)
            draft.warn(loc, _mm2_only_message(setting))
            return
        candidates = [prefix + name for name in FLOW_PROPERTY_KEYS]
        raise draft.error(
            "unknown key",
            loc,
            suggestions=difflib.get_close_matches(prop.key, candidates, n=3, cutoff=0.6),
            valid=f"{prefix}<setting> where <setting> is a MirrorMaker 2 connector setting (topics, groups, "
            "emit.checkpoints.enabled, …), consumer.*/producer.*/admin.*, or mirrordrill.*",
        )


def _is_cluster_setting(rest: str) -> bool:
    return (
        rest == "bootstrap.servers" or is_client_setting(rest) or rest.startswith(("consumer.", "producer.", "admin."))
    )


def _mm2_only_message(key: str) -> str:
    if key.startswith("sync.topic.acls"):
        return "MirrorMaker 2 syncs topic ACLs; the mirrordrill replicator does not, so this is used for MM2 only"
    return "used only when running MirrorMaker 2; the mirrordrill replicator ignores it"


def parse_mm2_properties(text: str, source_name: str = "<properties>") -> ReplicatorConfig:
    """Load an MM2 dedicated-mode properties file (``connect-mirror-maker.properties``)."""
    draft = _PropertiesReader(text, source_name).read()
    return _build(draft)


# ======================================================================================
# YAML -> draft
# ======================================================================================
_YAML_FLOW_FIELDS = tuple(name for name in FlowConfig.model_fields if name not in ("source", "target"))
_YAML_DEFAULT_FIELDS = tuple(name for name in _YAML_FLOW_FIELDS if name not in _NOT_DEFAULTS)
_YAML_CLUSTER_FIELDS = tuple(ClusterConfig.model_fields)
_YAML_TOP_FIELDS = ("clusters", "flows", "defaults", "client", "spark_master", "checkpoint_dir", "mm2_only")
_PROPERTY_NAME_OF = {name: prop for prop, name in FLOW_PROPERTY_KEYS.items()}


class _YamlReader:
    """Sorts a composed YAML document into a draft, keeping node line numbers."""

    def __init__(self, text: str, source: str) -> None:
        self.source = source
        self.text = text
        self._constructor = yaml.SafeLoader("")
        self.draft: _Draft

    def read(self) -> _Draft:
        loader = yaml.SafeLoader(self.text)
        try:
            root = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            raise ConfigError(
                f"invalid YAML: {exc.problem or exc}",
                source=self.source,
                line=mark.line + 1 if mark else None,
                valid="a YAML mapping",
            ) from None
        finally:
            loader.dispose()
        if root is None:
            raise ConfigError("the file is empty", source=self.source, line=1, valid="clusters: and flows:")
        top = self._mapping(root, "(document)")
        clusters = top.get("clusters")
        if clusters is None:
            raise ConfigError(
                "no 'clusters' mapping",
                source=self.source,
                line=1,
                key="clusters",
                valid="clusters: {A: {bootstrap_servers: ...}}",
            )
        draft = _Draft(self.source, self._loc("clusters", clusters[0]), "yaml")
        self.draft = draft
        for key, (key_node, _) in top.items():
            self._expect(key, key_node, _YAML_TOP_FIELDS, "top-level keys")
        self._read_clusters(clusters[1])
        if "defaults" in top:
            self._read_flow_body(
                top["defaults"][1], "defaults", draft.defaults, draft.default_dicts, _YAML_DEFAULT_FIELDS
            )
        if "flows" in top:
            self._read_flows(top["flows"][1])
        for name in ("spark_master", "checkpoint_dir"):
            if name in top:
                key_node, value_node = top[name]
                draft.globals[name] = _Setting(self._scalar(value_node), self._loc(name, value_node))
        if "client" in top:
            self._read_dict(top["client"][1], "client", draft.client)
        if "mm2_only" in top:
            self._read_mm2_only(top["mm2_only"][1], "mm2_only", draft.mm2_only, level="top")
        return draft

    # -- node helpers ---------------------------------------------------------------
    def _loc(self, key: str, node: yaml.Node) -> _Loc:
        return _Loc(key, node.start_mark.line + 1)

    def _mapping(self, node: yaml.Node, path: str) -> dict[str, tuple[yaml.Node, yaml.Node]]:
        if not isinstance(node, yaml.MappingNode):
            raise ConfigError(
                "expected a mapping",
                source=self.source,
                line=node.start_mark.line + 1,
                key=path,
                valid="key: value pairs",
            )
        result: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for key_node, value_node in node.value:
            key = self._scalar(key_node)
            if not isinstance(key, str):
                key = str(key)
            if key in result:
                raise ConfigError(
                    f"duplicate key (first on line {result[key][0].start_mark.line + 1})",
                    source=self.source,
                    line=key_node.start_mark.line + 1,
                    key=_join(path, key),
                    valid="each key once",
                )
            result[key] = (key_node, value_node)
        return result

    def _scalar(self, node: yaml.Node) -> Any:
        return self._constructor.construct_object(node, deep=True)

    def _expect(self, key: str, node: yaml.Node, allowed: Iterable[str], what: str, path: str = "") -> None:
        allowed = tuple(allowed)
        if key in allowed:
            return
        suggestions = difflib.get_close_matches(key, allowed, n=3, cutoff=0.6)
        if key in FLOW_PROPERTY_KEYS and FLOW_PROPERTY_KEYS[key] in allowed:
            suggestions = [FLOW_PROPERTY_KEYS[key]]  # an MM2 name: offer its YAML spelling
        listed = ", ".join(allowed) if len(allowed) <= 10 else ", ".join(allowed[:8]) + ", … (FlowConfig field names)"
        raise ConfigError(
            "unknown key",
            source=self.source,
            line=node.start_mark.line + 1,
            key=_join(path, key),
            suggestions=suggestions,
            valid=f"{what}: {listed}",
        )

    # -- sections -------------------------------------------------------------------
    def _read_clusters(self, node: yaml.Node) -> None:
        for alias, (key_node, value_node) in self._mapping(node, "clusters").items():
            path = f"clusters.{alias}"
            cluster = _ClusterDraft(self._loc(path, key_node))
            self.draft.clusters[alias] = cluster
            if isinstance(value_node, yaml.ScalarNode) and self._scalar(value_node) is None:
                continue  # reported as "no bootstrap servers" by the builder
            for key, (k_node, v_node) in self._mapping(value_node, path).items():
                self._expect(key, k_node, _YAML_CLUSTER_FIELDS, "cluster keys", path)
                if key == "bootstrap_servers":
                    cluster.fields[key] = _Setting(
                        self._string_list(v_node, _join(path, key)), self._loc(_join(path, key), v_node)
                    )
                elif key == "mm2_only":
                    self._read_mm2_only(v_node, _join(path, key), cluster.dicts[key], level="cluster")
                else:
                    self._read_dict(v_node, _join(path, key), cluster.dicts[key])

    def _read_flows(self, node: yaml.Node) -> None:
        if not isinstance(node, yaml.SequenceNode):
            raise ConfigError(
                "expected a list of flows",
                source=self.source,
                line=node.start_mark.line + 1,
                key="flows",
                valid="- {source: A, target: B}",
            )
        for index, item in enumerate(node.value):
            path = f"flows[{index}]"
            body = self._mapping(item, path)
            ends: dict[str, str] = {}
            for end in ("source", "target"):
                if end not in body:
                    raise ConfigError(
                        f"missing '{end}'",
                        source=self.source,
                        line=item.start_mark.line + 1,
                        key=path,
                        valid="source: <cluster> and target: <cluster>",
                    )
                value = self._scalar(body[end][1])
                if not isinstance(value, str) or value not in self.draft.clusters:
                    raise ConfigError(
                        f"cluster {value!r} is not declared under clusters",
                        source=self.source,
                        line=body[end][1].start_mark.line + 1,
                        key=f"{path}.{end}",
                        suggestions=difflib.get_close_matches(str(value), list(self.draft.clusters), n=2),
                        valid="one of " + ", ".join(self.draft.clusters),
                    )
                ends[end] = value
            if any(d.source == ends["source"] and d.target == ends["target"] for d in self.draft.flows):
                raise ConfigError(
                    f"flow {ends['source']}->{ends['target']} is declared twice",
                    source=self.source,
                    line=item.start_mark.line + 1,
                    key=path,
                    valid="each flow once",
                )
            flow = _FlowDraft(ends["source"], ends["target"], self._loc(path, item), index)
            flow.end_locs = {end: self._loc(f"{path}.{end}", body[end][1]) for end in ("source", "target")}
            self.draft.flows.append(flow)
            rest = {k: v for k, v in body.items() if k not in ("source", "target")}
            self._read_flow_body(rest, path, flow.fields, flow.dicts, (*_YAML_FLOW_FIELDS, "num_streams"))

    def _read_flow_body(
        self,
        node: yaml.Node | dict[str, tuple[yaml.Node, yaml.Node]],
        path: str,
        fields: dict[str, _Setting],
        dicts: dict[str, dict[str, _Setting]],
        allowed: tuple[str, ...],
    ) -> None:
        body = node if isinstance(node, dict) else self._mapping(node, path)
        for key, (key_node, value_node) in body.items():
            self._expect(key, key_node, allowed, "flow keys", path)
            key_path = _join(path, key)
            if key in (*_FLOW_DICTS,):
                self._read_dict(value_node, key_path, dicts[key])
                continue
            if key == "mm2_only":
                self._read_mm2_only(value_node, key_path, dicts[key], level="flow")
                continue
            name = "tasks_max" if key == "num_streams" else key
            if name in fields:
                raise ConfigError(
                    "tasks_max and num_streams are the same setting; give one",
                    source=self.source,
                    line=key_node.start_mark.line + 1,
                    key=key_path,
                    valid="tasks_max or num_streams",
                )
            value = self._scalar(value_node)
            if get_origin(_field_annotation(FlowConfig, name)) is list:
                value = self._string_list(value_node, key_path)
            fields[name] = _Setting(value, self._loc(key_path, value_node))

    def _string_list(self, node: yaml.Node, path: str) -> list[str]:
        value = self._scalar(node)
        if isinstance(value, str):
            return parse_mm2_list(value)
        if isinstance(value, list) and all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in value):
            return [str(v) for v in value]
        raise ConfigError(
            "expected a list of strings",
            source=self.source,
            line=node.start_mark.line + 1,
            key=path,
            valid="[a, b] or 'a, b'",
        )

    def _read_dict(self, node: yaml.Node, path: str, target: dict[str, _Setting]) -> None:
        for key, (key_node, value_node) in self._mapping(node, path).items():
            value = self._scalar(value_node)
            if isinstance(value, bool):
                value = "true" if value else "false"
            elif isinstance(value, (int, float, str)):
                value = str(value).strip()
            else:
                raise ConfigError(
                    "expected a single value",
                    source=self.source,
                    line=value_node.start_mark.line + 1,
                    key=_join(path, key),
                    valid="a string, number or boolean",
                )
            target[key] = _Setting(value, self._loc(_join(path, key), key_node))

    def _read_mm2_only(self, node: yaml.Node, path: str, target: dict[str, _Setting], *, level: str) -> None:
        self._read_dict(node, path, target)
        allowed = {"top": (*_WORKER_KEYS, *_CONNECTOR_MM2_ONLY), "cluster": _WORKER_KEYS, "flow": _CONNECTOR_MM2_ONLY}[
            level
        ]
        for key, setting in target.items():
            if not _matches_any(key, allowed):
                raise ConfigError(
                    "not a MirrorMaker 2-only setting"
                    + (
                        f" (mirrordrill honours it: use {FLOW_PROPERTY_KEYS[key]})" if key in FLOW_PROPERTY_KEYS else ""
                    ),
                    source=self.source,
                    line=setting.loc.line,
                    key=setting.loc.key,
                    suggestions=[
                        m
                        for m in difflib.get_close_matches(key, _MM2_ONLY_EXAMPLES, n=2, cutoff=0.6)
                        if _matches_any(m, allowed)
                    ],
                    valid="Connect worker settings (offset.storage.*, …)"
                    if level != "flow"
                    else "sync.topic.acls.*, errors.*, …",
                )


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def parse_yaml(text: str, source_name: str = "<yaml>") -> ReplicatorConfig:
    """Load the replicator's YAML form (same model as the MM2 properties)."""
    draft = _YamlReader(text, source_name).read()
    return _build(draft)


# ======================================================================================
# Draft -> models, with errors located in the file
# ======================================================================================
def _located(
    draft: _Draft,
    error: ValidationError,
    locate: Callable[[str | None, str | None, InvalidSetting | None], _Loc | None],
) -> ConfigError:
    detail = error.errors()[0]
    cause = detail.get("ctx", {}).get("error")
    if isinstance(cause, InvalidSetting):
        loc = locate(cause.field, cause.subkey, cause)
        return draft.error(cause.message, loc, valid=cause.valid)
    path = detail["loc"]
    name = str(path[0]) if path else None
    sub = str(path[1]) if len(path) > 1 else None
    loc = locate(name, sub, None)
    message = detail["msg"]
    if detail["type"] != "missing":
        message += f", got {detail.get('input')!r}"
    if detail["type"] == "missing" and name == "bootstrap_servers":
        message = "the cluster has no bootstrap servers"
    elif detail["type"] == "too_short" and name == "bootstrap_servers":
        message = "the cluster's bootstrap servers list is empty"
    return draft.error(message, loc)


_PLACEHOLDER = re.compile(r"\$\{[^}:]+:[^}]*\}")


def _warn_placeholders(draft: _Draft) -> None:
    """Config-provider references (``${file:/path:key}``) are resolved by MM2 only."""
    groups = [draft.client, *draft.default_dicts.values()]
    groups += [entries for cluster in draft.clusters.values() for entries in cluster.dicts.values()]
    groups += [entries for flow in draft.flows for entries in flow.dicts.values()]
    for entries in groups:
        for setting in entries.values():
            if isinstance(setting.value, str) and _PLACEHOLDER.search(setting.value):
                draft.warn(
                    setting.loc,
                    "MirrorMaker 2 resolves ${provider:...} references through config.providers; the mirrordrill "
                    "replicator passes the text unchanged",
                )


def _build(draft: _Draft) -> ReplicatorConfig:
    _warn_placeholders(draft)
    clusters: dict[str, ClusterConfig] = {}
    for alias, cd in draft.clusters.items():
        data: dict[str, Any] = {name: s.value for name, s in cd.fields.items()}
        data.update({name: {k: s.value for k, s in entries.items()} for name, entries in cd.dicts.items()})

        def locate_cluster(
            name: str | None, sub: str | None, _cause: Any, cd: _ClusterDraft = cd, alias: str = alias
        ) -> _Loc:
            return _cluster_loc(draft, cd, alias, name, sub)

        try:
            clusters[alias] = ClusterConfig(**data)
        except ValidationError as exc:
            raise _located(draft, exc, locate_cluster) from None

    flows: list[FlowConfig] = []
    merged: list[tuple[dict[str, _Setting], dict[str, dict[str, _Setting]]]] = []
    for fd in draft.flows:
        settings = {**draft.defaults, **fd.fields}
        dicts = {name: {**draft.default_dicts[name], **fd.dicts[name]} for name in (*_FLOW_DICTS, "mm2_only")}
        reset = dicts["consumer"].pop("auto.offset.reset", None)
        if reset is not None:
            # A flow-level consumer auto.offset.reset is the flow's start position.
            if reset.value not in _STARTING_OFFSETS:
                raise draft.error(
                    f"auto.offset.reset = {reset.value!r} has no Spark equivalent", reset.loc, valid="earliest, latest"
                )
            given = settings.get("starting_offsets")
            if given is not None and given.value != reset.value:
                raise draft.error(
                    f"contradicts starting_offsets = {given.value!r} (line {given.loc.line})",
                    reset.loc,
                    valid=f"{given.value!r}, or drop one of the two",
                )
            settings["starting_offsets"] = reset
        merged.append((settings, dicts))
        data = {name: s.value for name, s in settings.items()}
        data.update({name: {k: s.value for k, s in entries.items()} for name, entries in dicts.items()})

        def locate_flow(
            name: str | None,
            sub: str | None,
            _cause: Any,
            fd: _FlowDraft = fd,
            settings: dict[str, _Setting] = settings,
            dicts: dict[str, dict[str, _Setting]] = dicts,
        ) -> _Loc:
            return _flow_loc(draft, fd, settings, dicts, name, sub)

        try:
            flows.append(FlowConfig(source=fd.source, target=fd.target, **data))
        except ValidationError as exc:
            raise _located(draft, exc, locate_flow) from None

    top: dict[str, Any] = {name: s.value for name, s in draft.globals.items()}

    def locate_top(name: str | None, sub: str | None, cause: InvalidSetting | None) -> _Loc | None:
        if cause is not None and cause.flow is not None:
            settings, dicts = merged[cause.flow]
            return _flow_loc(draft, draft.flows[cause.flow], settings, dicts, cause.field, cause.subkey)
        if cause is not None and cause.cluster is not None:
            return _cluster_loc(draft, draft.clusters[cause.cluster], cause.cluster, cause.field, cause.subkey)
        if name in ("client", "mm2_only"):
            entries = draft.client if name == "client" else draft.mm2_only
            if sub in entries:
                return entries[sub].loc
        if name in draft.globals:
            return draft.globals[name].loc
        return draft.clusters_loc

    try:
        return ReplicatorConfig(
            clusters=clusters,
            flows=flows,
            client={k: s.value for k, s in draft.client.items()},
            mm2_only={k: s.value for k, s in draft.mm2_only.items()},
            warnings=list(draft.warnings),
            **top,
        )
    except ValidationError as exc:
        raise _located(draft, exc, locate_top) from None


def _cluster_loc(draft: _Draft, cd: _ClusterDraft, alias: str, name: str | None, sub: str | None) -> _Loc:
    if name in cd.fields:
        return cd.fields[name].loc
    if name in cd.dicts and sub in cd.dicts[name]:
        return cd.dicts[name][sub].loc
    # A setting the file lacks is reported where the cluster is declared.
    return _Loc(draft.cluster_key(alias, name, sub), cd.loc.line)


def _flow_loc(
    draft: _Draft,
    fd: _FlowDraft,
    settings: Mapping[str, _Setting],
    dicts: Mapping[str, Mapping[str, _Setting]],
    name: str | None,
    sub: str | None,
) -> _Loc:
    if name in settings:
        return settings[name].loc
    if name in dicts and sub is not None and sub in dicts[name]:
        return dicts[name][sub].loc
    if name in fd.end_locs:
        return fd.end_locs[name]
    # A setting the file lacks is reported where the flow first appears.
    return _Loc(draft.flow_key(fd, name, sub), fd.loc.line)


# ======================================================================================
# Model -> MM2 properties
# ======================================================================================
def _escape(text: str, *, is_key: bool) -> str:
    out: list[str] = []
    for pos, char in enumerate(text):
        if char == "\\":
            out.append("\\\\")
        elif char == "\t":
            out.append("\\t")
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif char == "\f":
            out.append("\\f")
        elif char == " " and (is_key or pos == 0):
            out.append("\\ ")
        elif (char in "=:" and is_key) or (char in "#!" and pos == 0):
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) > 0x7E:
            # MM2 reads the file as ISO-8859-1; \\u escapes survive any encoding.
            out.append("".join(f"\\u{unit:04x}" for unit in _utf16_units(char)))
        else:
            out.append(char)
    return "".join(out)


def _utf16_units(char: str) -> list[int]:
    encoded = char.encode("utf-16-be")
    return [int.from_bytes(encoded[i : i + 2], "big") for i in range(0, len(encoded), 2)]


def _property(key: str, value: str) -> str:
    return f"{_escape(key, is_key=True)} = {_escape(value, is_key=False)}"


def _render_value(name: str, value: Any) -> str:
    if name == "replication_policy_class":
        return POLICY_CLASSES[value]
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(value)
    return str(value)


# Flow settings that MM2 also honours at top level: use.defaults.from is read only per
# flow by MM2, and a top-level mirrordrill.checkpoint.dir means the base directory.
_TOP_LEVEL_RENDERABLE = tuple(
    prop for prop, name in FLOW_PROPERTY_KEYS.items() if name not in ("enabled", "checkpoint_dir", "use_defaults_from")
)


def _shared_flow_settings(config: ReplicatorConfig, include_mirrordrill: bool) -> dict[str, Any]:
    """Flow settings every flow has with the same non-default value, to write once at top level.

    MM2 also runs heartbeat-only herders for cluster pairs the file never names, and those
    read top-level values only (e.g. heartbeats.topic.replication.factor on a 1-broker test).
    """
    shared: dict[str, Any] = {}
    if not config.flows:
        return shared
    for prop in _TOP_LEVEL_RENDERABLE:
        if prop.startswith(MIRRORDRILL_PREFIX) and not include_mirrordrill:
            continue
        name = FLOW_PROPERTY_KEYS[prop]
        first = getattr(config.flows[0], name)
        default = FlowConfig.model_fields[name].get_default(call_default_factory=True)
        if first is not None and first != default and all(getattr(f, name) == first for f in config.flows):
            shared[prop] = first
    return shared


def to_mm2_properties(config: ReplicatorConfig, *, include_mirrordrill: bool = True) -> str:
    """Render the configuration as an MM2 dedicated-mode properties file with the same meaning.

    Values every flow shares are written once at top level, the rest per flow
    (``A->B.<key>``), and MM2's defaults are left out. ``include_mirrordrill`` adds our own
    ``mirrordrill.*`` knobs, which MM2 ignores.
    """
    lines = [
        "# MirrorMaker 2 dedicated-mode configuration rendered by mirrordrill.",
        _property("clusters", ", ".join(config.clusters)),
    ]
    for key, value in config.client.items():
        lines.append(_property(key, value))
    for key, value in config.mm2_only.items():
        lines.append(_property(key, value))
    if include_mirrordrill:
        for prop, name in GLOBAL_PROPERTY_KEYS.items():
            value = getattr(config, name)
            if value is not None and value != ReplicatorConfig.model_fields[name].default:
                lines.append(_property(prop, value))
    shared = _shared_flow_settings(config, include_mirrordrill)
    for prop, value in shared.items():
        lines.append(_property(prop, _render_value(FLOW_PROPERTY_KEYS[prop], value)))
    for alias, cluster in config.clusters.items():
        lines += [
            "",
            f"# cluster {alias}",
            _property(f"{alias}.bootstrap.servers", ", ".join(cluster.bootstrap_servers)),
        ]
        for key, value in cluster.client.items():
            lines.append(_property(f"{alias}.{key}", value))
        for kind in _FLOW_DICTS:
            for key, value in getattr(cluster, kind).items():
                lines.append(_property(f"{alias}.{kind}.{key}", value))
        for key, value in cluster.mm2_only.items():
            lines.append(_property(f"{alias}.{key}", value))
    for flow in config.flows:
        prefix = f"{flow.source}->{flow.target}."
        lines += ["", f"# flow {flow.name}", _property(prefix + "enabled", _render_value("enabled", flow.enabled))]
        for prop, name in FLOW_PROPERTY_KEYS.items():
            if name == "enabled" or prop in shared or (prop.startswith(MIRRORDRILL_PREFIX) and not include_mirrordrill):
                continue
            value = getattr(flow, name)
            default = FlowConfig.model_fields[name].get_default(call_default_factory=True)
            if value is not None and value != default:
                lines.append(_property(prefix + prop, _render_value(name, value)))
        if flow.starting_offsets is not None:
            # MM2's own spelling, so MM2 starts where our replicator starts.
            lines.append(_property(prefix + "consumer.auto.offset.reset", flow.starting_offsets))
        for kind in _FLOW_DICTS:
            for key, value in getattr(flow, kind).items():
                lines.append(_property(f"{prefix}{kind}.{key}", value))
        for key, value in flow.mm2_only.items():
            lines.append(_property(prefix + key, value))
    return "\n".join(lines) + "\n"


# ======================================================================================
# Files
# ======================================================================================
def load_config(path: str | Path) -> ReplicatorConfig:
    """Load ``.properties`` (MM2, read as ISO-8859-1 like MM2 does) or ``.yaml``/``.yml``."""
    file = Path(path)
    suffix = file.suffix.lower()
    if suffix == ".properties":
        return parse_mm2_properties(file.read_bytes().decode("latin-1"), str(file))
    if suffix in (".yaml", ".yml"):
        try:
            text = file.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(f"not UTF-8: {exc}", source=str(file), valid="a UTF-8 YAML file") from None
        return parse_yaml(text, str(file))
    raise ConfigError(
        f"cannot tell the format from the extension {file.suffix!r}",
        source=str(file),
        valid=".properties (MirrorMaker 2), .yaml or .yml",
    )
