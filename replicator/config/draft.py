"""A configuration as read, before it is a model: every setting with where the file wrote it.

Both readers (MM2 properties and YAML) sort a file into a ``Draft``; ``build`` turns it into
the models and reports a failed rule at the line and key that caused it, or, for a setting the
file lacks, where the cluster or flow is declared.
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from mirrordrill.primitives.config_errors import ConfigError, ConfigWarning, InvalidSetting
from mirrordrill.replicator.config.flow import FlowConfig
from mirrordrill.replicator.config.mm2_keys import FLOW_DICTS, PROPERTY_NAME_OF
from mirrordrill.replicator.config.settings import ClusterConfig, ReplicatorConfig
from mirrordrill.replicator.config.validation import STARTING_OFFSETS


@dataclass(frozen=True)
class Location:
    """Where a setting is written: its key as the file spells it, and its line."""

    key: str
    line: int | None


@dataclass
class Setting:
    """A value as read, with its location."""

    value: Any
    loc: Location


@dataclass
class ClusterDraft:
    loc: Location
    fields: dict[str, Setting] = field(default_factory=dict)
    dicts: dict[str, dict[str, Setting]] = field(
        default_factory=lambda: {name: {} for name in ("client", *FLOW_DICTS, "mm2_only")}
    )


@dataclass
class FlowDraft:
    source: str
    target: str
    loc: Location
    index: int
    end_locs: dict[str, Location] = field(default_factory=dict)
    fields: dict[str, Setting] = field(default_factory=dict)
    dicts: dict[str, dict[str, Setting]] = field(
        default_factory=lambda: {name: {} for name in (*FLOW_DICTS, "mm2_only")}
    )


@dataclass
class Draft:
    source: str
    clusters_loc: Location
    style: Literal["properties", "yaml"]
    clusters: dict[str, ClusterDraft] = field(default_factory=dict)
    flows: list[FlowDraft] = field(default_factory=list)
    defaults: dict[str, Setting] = field(default_factory=dict)
    default_dicts: dict[str, dict[str, Setting]] = field(
        default_factory=lambda: {name: {} for name in (*FLOW_DICTS, "mm2_only")}
    )
    globals: dict[str, Setting] = field(default_factory=dict)
    client: dict[str, Setting] = field(default_factory=dict)
    mm2_only: dict[str, Setting] = field(default_factory=dict)
    warnings: list[ConfigWarning] = field(default_factory=list)

    def error(self, problem: str, loc: Location | None, **kwargs: Any) -> ConfigError:
        return ConfigError(
            problem, source=self.source, line=loc.line if loc else None, key=loc.key if loc else None, **kwargs
        )

    def warn(self, loc: Location, message: str) -> None:
        self.warnings.append(ConfigWarning(self.source, loc.line, loc.key, message))

    def flow_draft(self, source: str, target: str, loc: Location) -> FlowDraft:
        for draft in self.flows:
            if draft.source == source and draft.target == target:
                return draft
        draft = FlowDraft(source, target, loc, len(self.flows))
        self.flows.append(draft)
        return draft

    def cluster_key(self, alias: str, name: str | None, sub: str | None) -> str:
        """How the file would spell a cluster setting, for settings it does not contain."""
        if self.style == "yaml":
            return ".".join(part for part in ("clusters", alias, name, sub) if part and part != "alias")
        if name == "bootstrap_servers":
            return f"{alias}.bootstrap.servers"
        if name in FLOW_DICTS and sub:
            return f"{alias}.{name}.{sub}"
        if name in ("client", "mm2_only") and sub:
            return f"{alias}.{sub}"
        return "clusters"

    def flow_key(self, flow: FlowDraft, name: str | None, sub: str | None) -> str:
        """How the file would spell a flow setting, for settings it does not contain."""
        if self.style == "yaml":
            return ".".join(part for part in (f"flows[{flow.index}]", name, sub) if part)
        prefix = f"{flow.source}->{flow.target}."
        if name in PROPERTY_NAME_OF:
            return prefix + PROPERTY_NAME_OF[name]
        if name == "starting_offsets":
            return prefix + "consumer.auto.offset.reset"
        if name in FLOW_DICTS and sub:
            return f"{prefix}{name}.{sub}"
        if name == "mm2_only" and sub:
            return prefix + sub
        return flow.loc.key


def _unwrap_optional(annotation: Any) -> Any:
    if get_origin(annotation) in (Union, types.UnionType):
        args = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def field_annotation(model: type[BaseModel], name: str) -> Any:
    """The type a model field holds (``X`` for ``X | None``), to convert text to."""
    return _unwrap_optional(model.model_fields[name].annotation)


# -- draft -> models ---------------------------------------------------------------------
def _located(
    draft: Draft,
    error: ValidationError,
    locate: Callable[[str | None, str | None, InvalidSetting | None], Location | None],
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


def _warn_placeholders(draft: Draft) -> None:
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


def build(draft: Draft) -> ReplicatorConfig:
    _warn_placeholders(draft)
    clusters = {alias: _build_cluster(draft, alias, cd) for alias, cd in draft.clusters.items()}
    flows: list[FlowConfig] = []
    merged: list[tuple[dict[str, Setting], dict[str, dict[str, Setting]]]] = []
    for fd in draft.flows:
        settings, dicts = _merged_flow_settings(draft, fd)
        merged.append((settings, dicts))
        flows.append(_build_flow(draft, fd, settings, dicts))

    top: dict[str, Any] = {name: s.value for name, s in draft.globals.items()}

    def locate_top(name: str | None, sub: str | None, cause: InvalidSetting | None) -> Location | None:
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


def _build_cluster(draft: Draft, alias: str, cd: ClusterDraft) -> ClusterConfig:
    data: dict[str, Any] = {name: s.value for name, s in cd.fields.items()}
    data.update({name: {k: s.value for k, s in entries.items()} for name, entries in cd.dicts.items()})

    def locate_cluster(name: str | None, sub: str | None, _cause: Any) -> Location:
        return _cluster_loc(draft, cd, alias, name, sub)

    try:
        return ClusterConfig(**data)
    except ValidationError as exc:
        raise _located(draft, exc, locate_cluster) from None


def _merged_flow_settings(
    draft: Draft, fd: FlowDraft
) -> tuple[dict[str, Setting], dict[str, dict[str, Setting]]]:
    """The flow's settings over the defaults; a consumer ``auto.offset.reset`` becomes its start position."""
    settings = {**draft.defaults, **fd.fields}
    dicts = {name: {**draft.default_dicts[name], **fd.dicts[name]} for name in (*FLOW_DICTS, "mm2_only")}
    reset = dicts["consumer"].pop("auto.offset.reset", None)
    if reset is not None:
        # A flow-level consumer auto.offset.reset is the flow's start position.
        if reset.value not in STARTING_OFFSETS:
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
    return settings, dicts


def _build_flow(
    draft: Draft, fd: FlowDraft, settings: dict[str, Setting], dicts: dict[str, dict[str, Setting]]
) -> FlowConfig:
    data: dict[str, Any] = {name: s.value for name, s in settings.items()}
    data.update({name: {k: s.value for k, s in entries.items()} for name, entries in dicts.items()})

    def locate_flow(name: str | None, sub: str | None, _cause: Any) -> Location:
        return _flow_loc(draft, fd, settings, dicts, name, sub)

    try:
        return FlowConfig(source=fd.source, target=fd.target, **data)
    except ValidationError as exc:
        raise _located(draft, exc, locate_flow) from None


def _cluster_loc(draft: Draft, cd: ClusterDraft, alias: str, name: str | None, sub: str | None) -> Location:
    if name in cd.fields:
        return cd.fields[name].loc
    if name in cd.dicts and sub in cd.dicts[name]:
        return cd.dicts[name][sub].loc
    # A setting the file lacks is reported where the cluster is declared.
    return Location(draft.cluster_key(alias, name, sub), cd.loc.line)


def _flow_loc(
    draft: Draft,
    fd: FlowDraft,
    settings: Mapping[str, Setting],
    dicts: Mapping[str, Mapping[str, Setting]],
    name: str | None,
    sub: str | None,
) -> Location:
    if name is not None and name in settings:
        return settings[name].loc
    if name is not None and name in dicts and sub is not None and sub in dicts[name]:
        return dicts[name][sub].loc
    if name in fd.end_locs:
        return fd.end_locs[name]
    # A setting the file lacks is reported where the flow first appears.
    return Location(draft.flow_key(fd, name, sub), fd.loc.line)
