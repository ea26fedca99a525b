"""The rules a configuration must keep, as functions the models' validators call.

Each rule raises ``InvalidSetting`` naming the field (and flow or cluster) at fault; the
loaders turn that into an error located in the file. The flow rules here are also what the
harness checks a drill's flows with (``harness.drill.replicators.setup``), so a flow is judged the
same way wherever it is written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from mirrordrill.primitives.config_errors import InvalidSetting
from mirrordrill.replicator.config.client_values import check_client_values

if TYPE_CHECKING:
    from mirrordrill.replicator.config.flow import FlowConfig
    from mirrordrill.replicator.config.settings import ReplicatorConfig

ALIAS_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
STARTING_OFFSETS = ("earliest", "latest")
# The subset of Spark interval strings a trigger needs; Spark knows units by full name only.
_TRIGGER_INTERVAL = re.compile(r"(?:interval\s+)?(\d+)\s+(millisecond|second|minute|hour)s?", re.IGNORECASE)
_INTERVAL_FIELDS = (
    "sync_topic_configs_interval_seconds",
    "refresh_topics_interval_seconds",
    "refresh_groups_interval_seconds",
    "emit_checkpoints_interval_seconds",
    "sync_group_offsets_interval_seconds",
    "emit_heartbeats_interval_seconds",
)
_REPLICATION_FACTOR_FIELDS = (
    "replication_factor",
    "checkpoints_topic_replication_factor",
    "heartbeats_topic_replication_factor",
    "offset_syncs_topic_replication_factor",
)


class StrictModel(BaseModel):
    # Strict: a string "1" is not a number and "yes" is not a bool; loaders convert MM2's
    # string values themselves, by MM2's rules, before the model sees them.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def is_client_setting(key: str) -> bool:
    """True for the settings MM2 hands from a cluster (or top level) to every client of it."""
    return key == "security.protocol" or key.startswith(("ssl.", "sasl."))


def trigger_seconds(text: str) -> float | None:
    """A Spark trigger interval in seconds; None when it is not one we can read."""
    match = _TRIGGER_INTERVAL.fullmatch(text.strip())
    if match is None:
        return None
    factor = {"millisecond": 0.001, "second": 1.0, "minute": 60.0, "hour": 3600.0}[match.group(2).lower()]
    return int(match.group(1)) * factor


# -- settings -----------------------------------------------------------------------------
def check_keys(settings: Mapping[str, str], *, field: str) -> None:
    for key in settings:
        if not key or key != key.strip():
            raise InvalidSetting(f"invalid setting name {key!r}", field=field, subkey=key)


def check_client_settings(settings: Mapping[str, str], *, field: str) -> None:
    check_keys(settings, field=field)
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


def check_bootstrap_servers(servers: Iterable[str]) -> None:
    for server in servers:
        if not server or any(c.isspace() or c == "," for c in server):
            raise InvalidSetting(
                f"invalid bootstrap server {server!r}", field="bootstrap_servers", valid="host:port, host:port"
            )


def check_pattern_list(patterns: list[str], *, field: str) -> None:
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


# -- naming: the flow invariants ----------------------------------------------------------
def check_flow_ends(source: str, target: str) -> None:
    """A flow joins two different clusters whose aliases MM2 can write in its keys."""
    for name, alias in (("source", source), ("target", target)):
        if not ALIAS_PATTERN.fullmatch(alias):
            raise InvalidSetting(f"invalid cluster alias {alias!r}", field=name, valid="letters, digits, '.', '_', '-'")
    if source == target:
        raise InvalidSetting(
            f"flow {source}->{target} replicates a cluster onto itself", field="target", valid="a different cluster"
        )


def check_separator(separator: str, aliases: Iterable[str], *, flow: int | None = None) -> None:
    """Remote topic names must lead back to their source: the separator is in no alias."""
    if not separator:
        raise InvalidSetting("the separator must not be empty", field="replication_policy_separator", flow=flow)
    for alias in aliases:
        if separator in alias:
            raise InvalidSetting(
                f"cluster alias {alias!r} contains the separator {separator!r}, so remote topic "
                "names could not be traced back to their source",
                field="replication_policy_separator",
                flow=flow,
                valid="a separator that appears in no cluster alias",
            )


# -- one flow's settings ------------------------------------------------------------------
def check_mm2_flow_settings(flow: FlowConfig) -> None:
    """MirrorMaker 2's own rules for a flow's intervals, replication factors and features."""
    for name in _INTERVAL_FIELDS:
        if getattr(flow, name) == 0:
            raise InvalidSetting(
                "an interval of 0 seconds is invalid in MirrorMaker 2",
                field=name,
                valid="a positive number of seconds, or a negative one to disable",
            )
    for name in _REPLICATION_FACTOR_FIELDS:
        value = getattr(flow, name)
        if not (value == -1 or 1 <= value <= 32767):
            raise InvalidSetting(
                f"invalid replication factor {value}", field=name, valid="1..32767, or -1 for the broker default"
            )
    if not flow.emit_offset_syncs_enabled and (flow.emit_checkpoints_enabled or flow.sync_group_offsets_enabled):
        raise InvalidSetting(
            "checkpoints and group offset sync translate offsets through offset syncs, which are disabled",
            field="emit_offset_syncs_enabled",
            valid="true, or disable emit.checkpoints.enabled and sync.group.offsets.enabled",
        )
    if flow.sync_group_offsets_enabled and not flow.emit_checkpoints_enabled:
        raise InvalidSetting(
            "group offsets are synced from checkpoints, which are disabled (MM2's checkpoint connector "
            "refuses to start this way)",
            field="sync_group_offsets_enabled",
            valid="false, or emit.checkpoints.enabled = true",
        )
    for name in ("consumer", "producer", "admin", "mm2_only"):
        check_keys(getattr(flow, name), field=name)
    for client in ("consumer", "producer", "admin"):
        check_client_values(getattr(flow, client), client=client)
    if "auto.offset.reset" in flow.consumer:
        raise InvalidSetting(
            "the flow's start position is starting_offsets, not a consumer setting",
            field="consumer",
            subkey="auto.offset.reset",
            valid="starting_offsets = earliest | latest",
        )


def check_spark_flow_settings(flow: FlowConfig) -> None:
    """Our Spark knobs: a mode and a trigger interval that go together."""
    if flow.mode == "realtime" and flow.max_offsets_per_trigger is not None:
        raise InvalidSetting(
            "Spark's real-time mode does not batch by offsets; max_offsets_per_trigger needs microbatch mode",
            field="max_offsets_per_trigger",
            valid="unset, or mode = microbatch",
        )
    if flow.trigger_interval is not None and trigger_seconds(flow.trigger_interval) is None:
        raise InvalidSetting(
            f"cannot read trigger interval {flow.trigger_interval!r}",
            field="trigger_interval",
            valid="a Spark interval such as '500 milliseconds', '10 seconds', '5 minutes'",
        )
    if flow.mode == "realtime" and flow.trigger_interval is not None and trigger_seconds(flow.trigger_interval) == 0:
        raise InvalidSetting(
            "real-time mode needs a positive checkpoint interval",
            field="trigger_interval",
            valid="a positive interval such as '5 minutes'",
        )
    if flow.restore_history and flow.replication_policy_class == "identity":
        raise InvalidSetting(
            "restore_history writes '<target>.<topic>' back as '<topic>'; identity names are never renamed, "
            "so there is nothing to restore",
            field="restore_history",
            valid="false, or the default replication policy",
        )


# -- flows together -----------------------------------------------------------------------
def check_flows_against_clusters(config: ReplicatorConfig) -> None:
    """Every flow names declared clusters, once, with a separator no alias contains."""
    seen: dict[tuple[str, str], int] = {}
    for index, flow in enumerate(config.flows):
        for end in ("source", "target"):
            alias = getattr(flow, end)
            if alias not in config.clusters:
                raise InvalidSetting(
                    f"flow {flow.name} names cluster {alias!r}, which is not declared",
                    field=end,
                    flow=index,
                    valid="one of " + ", ".join(config.clusters),
                )
        if (flow.source, flow.target) in seen:
            raise InvalidSetting(f"flow {flow.name} is declared twice", field="target", flow=index)
        seen[(flow.source, flow.target)] = index
        check_separator(flow.replication_policy_separator, config.clusters, flow=index)
        check_start_position(config, index, flow)


def check_start_position(config: ReplicatorConfig, index: int, flow: FlowConfig) -> None:
    reset = config.clusters[flow.source].consumer.get("auto.offset.reset")
    if reset is None:
        return
    if reset not in STARTING_OFFSETS:
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


def check_identity_cycles(config: ReplicatorConfig) -> None:
    """On a replication cycle with identity names, every hop must stamp the provenance header."""
    enabled = [(i, f) for i, f in enumerate(config.flows) if f.enabled]
    reach: dict[str, set[str]] = {alias: {alias} for alias in config.clusters}
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


def check_checkpoint_dirs(config: ReplicatorConfig) -> None:
    """Two running flows never share a Spark checkpoint directory."""
    owners: dict[str, str] = {}
    for index, flow in enumerate(config.flows):
        path = config.flow_checkpoint_dir(flow)
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
