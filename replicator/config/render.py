"""Rendering a configuration as an MM2 dedicated-mode properties file with the same meaning."""

from __future__ import annotations

from typing import Any

from mirrordrill.primitives.properties_syntax import format_property
from mirrordrill.replicator.config.flow import FlowConfig
from mirrordrill.replicator.config.mm2_keys import FLOW_DICTS, FLOW_PROPERTY_KEYS, GLOBAL_PROPERTY_KEYS, MIRRORDRILL_PREFIX
from mirrordrill.replicator.config.settings import ReplicatorConfig
from mirrordrill.replicator.policy import POLICY_CLASSES


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
        format_property("clusters", ", ".join(config.clusters)),
    ]
    for key, value in config.client.items():
        lines.append(format_property(key, value))
    for key, value in config.mm2_only.items():
        lines.append(format_property(key, value))
    if include_mirrordrill:
        for prop, name in GLOBAL_PROPERTY_KEYS.items():
            value = getattr(config, name)
            default = ReplicatorConfig.model_fields[name].get_default(call_default_factory=True)
            if value is not None and value != default:
                lines.append(format_property(prop, _render_value(name, value)))
    shared = _shared_flow_settings(config, include_mirrordrill)
    for prop, value in shared.items():
        lines.append(format_property(prop, _render_value(FLOW_PROPERTY_KEYS[prop], value)))
    for alias, cluster in config.clusters.items():
        lines += [
            "",
            f"# cluster {alias}",
            format_property(f"{alias}.bootstrap.servers", ", ".join(cluster.bootstrap_servers)),
        ]
        for key, value in cluster.client.items():
            lines.append(format_property(f"{alias}.{key}", value))
        for kind in FLOW_DICTS:
            for key, value in getattr(cluster, kind).items():
                lines.append(format_property(f"{alias}.{kind}.{key}", value))
        for key, value in cluster.mm2_only.items():
            lines.append(format_property(f"{alias}.{key}", value))
    for flow in config.flows:
        prefix = f"{flow.source}->{flow.target}."
        lines += ["", f"# flow {flow.name}", format_property(prefix + "enabled", _render_value("enabled", flow.enabled))]
        for prop, name in FLOW_PROPERTY_KEYS.items():
            if name == "enabled" or prop in shared or (prop.startswith(MIRRORDRILL_PREFIX) and not include_mirrordrill):
                continue
            value = getattr(flow, name)
            default = FlowConfig.model_fields[name].get_default(call_default_factory=True)
            if value is not None and value != default:
                lines.append(format_property(prefix + prop, _render_value(name, value)))
        if flow.starting_offsets is not None:
            # MM2's own spelling, so MM2 starts where our replicator starts.
            lines.append(format_property(prefix + "consumer.auto.offset.reset", flow.starting_offsets))
        for kind in FLOW_DICTS:
            for key, value in getattr(flow, kind).items():
                lines.append(format_property(f"{prefix}{kind}.{key}", value))
        for key, value in flow.mm2_only.items():
            lines.append(format_property(prefix + key, value))
    return "\n".join(lines) + "\n"
