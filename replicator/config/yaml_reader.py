"""Reading the replicator's YAML form: the same model as the MM2 properties, in YAML's shape.

The document is composed, not loaded, so every setting keeps the line of its node; it is
sorted into a ``Draft`` like a properties file.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any, get_origin

import yaml

from mirrordrill.primitives.config_errors import ConfigError
from mirrordrill.primitives.properties_syntax import parse_mm2_list
from mirrordrill.replicator.config.draft import ClusterDraft, Draft, FlowDraft, Location, Setting, build, field_annotation
from mirrordrill.replicator.config.flow import FlowConfig
from mirrordrill.replicator.config.mm2_keys import (
    CONNECTOR_MM2_ONLY,
    FLOW_DICTS,
    FLOW_PROPERTY_KEYS,
    MM2_ONLY_EXAMPLES,
    NOT_DEFAULTS,
    WORKER_KEYS,
    matches_any,
)
from mirrordrill.replicator.config.settings import ClusterConfig, ReplicatorConfig

_YAML_FLOW_FIELDS = tuple(name for name in FlowConfig.model_fields if name not in ("source", "target"))
_YAML_DEFAULT_FIELDS = tuple(name for name in _YAML_FLOW_FIELDS if name not in NOT_DEFAULTS)
_YAML_CLUSTER_FIELDS = tuple(ClusterConfig.model_fields)
_YAML_TOP_FIELDS = (
    "clusters", "flows", "defaults", "client", "spark_master", "jars", "checkpoint_dir", "metrics_port", "driver_jit",
    "mm2_only",
)


class _YamlReader:
    """Sorts a composed YAML document into a draft, keeping node line numbers."""

    def __init__(self, text: str, source: str) -> None:
        self.source = source
        self.text = text
        self._constructor = yaml.SafeLoader("")
        self.draft: Draft

    def read(self) -> Draft:
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
        draft = Draft(self.source, self._loc("clusters", clusters[0]), "yaml")
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
        for name in ("spark_master", "jars", "checkpoint_dir", "metrics_port", "driver_jit"):
            if name in top:
                key_node, value_node = top[name]
                value = self._string_list(value_node, name) if name == "jars" else self._scalar(value_node)
                draft.globals[name] = Setting(value, self._loc(name, value_node))
        if "client" in top:
            self._read_dict(top["client"][1], "client", draft.client)
        if "mm2_only" in top:
            self._read_mm2_only(top["mm2_only"][1], "mm2_only", draft.mm2_only, level="top")
        return draft

    # -- node helpers ---------------------------------------------------------------
    def _error(self, problem: str, node: yaml.Node, key: str, **details: Any) -> ConfigError:
        """A problem with ``key``, reported at the line of ``node``."""
        return ConfigError(problem, source=self.source, line=node.start_mark.line + 1, key=key, **details)

    def _loc(self, key: str, node: yaml.Node) -> Location:
        return Location(key, node.start_mark.line + 1)

    def _mapping(self, node: yaml.Node, path: str) -> dict[str, tuple[yaml.Node, yaml.Node]]:
        if not isinstance(node, yaml.MappingNode):
            raise self._error(
                "expected a mapping",
                node,
                path,
                valid="key: value pairs",
            )
        result: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for key_node, value_node in node.value:
            key = self._scalar(key_node)
            if not isinstance(key, str):
                key = str(key)
            if key in result:
                raise self._error(
                    f"duplicate key (first on line {result[key][0].start_mark.line + 1})",
                    key_node,
                    _join(path, key),
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
        raise self._error(
            "unknown key",
            node,
            _join(path, key),
            suggestions=suggestions,
            valid=f"{what}: {listed}",
        )

    # -- sections -------------------------------------------------------------------
    def _read_clusters(self, node: yaml.Node) -> None:
        for alias, (key_node, value_node) in self._mapping(node, "clusters").items():
            path = f"clusters.{alias}"
            cluster = ClusterDraft(self._loc(path, key_node))
            self.draft.clusters[alias] = cluster
            if isinstance(value_node, yaml.ScalarNode) and self._scalar(value_node) is None:
                continue  # reported as "no bootstrap servers" by the builder
            for key, (k_node, v_node) in self._mapping(value_node, path).items():
                self._expect(key, k_node, _YAML_CLUSTER_FIELDS, "cluster keys", path)
                if key == "bootstrap_servers":
                    cluster.fields[key] = Setting(
                        self._string_list(v_node, _join(path, key)), self._loc(_join(path, key), v_node)
                    )
                elif key == "mm2_only":
                    self._read_mm2_only(v_node, _join(path, key), cluster.dicts[key], level="cluster")
                else:
                    self._read_dict(v_node, _join(path, key), cluster.dicts[key])

    def _read_flows(self, node: yaml.Node) -> None:
        if not isinstance(node, yaml.SequenceNode):
            raise self._error(
                "expected a list of flows",
                node,
                "flows",
                valid="- {source: A, target: B}",
            )
        for index, item in enumerate(node.value):
            path = f"flows[{index}]"
            body = self._mapping(item, path)
            ends: dict[str, str] = {}
            for end in ("source", "target"):
                if end not in body:
                    raise self._error(
                        f"missing '{end}'",
                        item,
                        path,
                        valid="source: <cluster> and target: <cluster>",
                    )
                value = self._scalar(body[end][1])
                if not isinstance(value, str) or value not in self.draft.clusters:
                    raise self._error(
                        f"cluster {value!r} is not declared under clusters",
                        body[end][1],
                        f"{path}.{end}",
                        suggestions=difflib.get_close_matches(str(value), list(self.draft.clusters), n=2),
                        valid="one of " + ", ".join(self.draft.clusters),
                    )
                ends[end] = value
            if any(d.source == ends["source"] and d.target == ends["target"] for d in self.draft.flows):
                raise self._error(
                    f"flow {ends['source']}->{ends['target']} is declared twice",
                    item,
                    path,
                    valid="each flow once",
                )
            flow = FlowDraft(ends["source"], ends["target"], self._loc(path, item), index)
            flow.end_locs = {end: self._loc(f"{path}.{end}", body[end][1]) for end in ("source", "target")}
            self.draft.flows.append(flow)
            rest = {k: v for k, v in body.items() if k not in ("source", "target")}
            self._read_flow_body(rest, path, flow.fields, flow.dicts, (*_YAML_FLOW_FIELDS, "num_streams"))

    def _read_flow_body(
        self,
        node: yaml.Node | dict[str, tuple[yaml.Node, yaml.Node]],
        path: str,
        fields: dict[str, Setting],
        dicts: dict[str, dict[str, Setting]],
        allowed: tuple[str, ...],
    ) -> None:
        body = node if isinstance(node, dict) else self._mapping(node, path)
        for key, (key_node, value_node) in body.items():
            self._expect(key, key_node, allowed, "flow keys", path)
            key_path = _join(path, key)
            if key in (*FLOW_DICTS,):
                self._read_dict(value_node, key_path, dicts[key])
                continue
            if key == "mm2_only":
                self._read_mm2_only(value_node, key_path, dicts[key], level="flow")
                continue
            name = "tasks_max" if key == "num_streams" else key
            if name in fields:
                raise self._error(
                    "tasks_max and num_streams are the same setting; give one",
                    key_node,
                    key_path,
                    valid="tasks_max or num_streams",
                )
            value = self._scalar(value_node)
            if get_origin(field_annotation(FlowConfig, name)) is list:
                value = self._string_list(value_node, key_path)
            fields[name] = Setting(value, self._loc(key_path, value_node))

    def _string_list(self, node: yaml.Node, path: str) -> list[str]:
        value = self._scalar(node)
        if isinstance(value, str):
            return parse_mm2_list(value)
        if isinstance(value, list) and all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in value):
            return [str(v) for v in value]
        raise self._error(
            "expected a list of strings",
            node,
            path,
            valid="[a, b] or 'a, b'",
        )

    def _read_dict(self, node: yaml.Node, path: str, target: dict[str, Setting]) -> None:
        for key, (key_node, value_node) in self._mapping(node, path).items():
            value = self._scalar(value_node)
            if isinstance(value, bool):
                value = "true" if value else "false"
            elif isinstance(value, (int, float, str)):
                value = str(value).strip()
            else:
                raise self._error(
                    "expected a single value",
                    value_node,
                    _join(path, key),
                    valid="a string, number or boolean",
                )
            target[key] = Setting(value, self._loc(_join(path, key), key_node))

    def _read_mm2_only(self, node: yaml.Node, path: str, target: dict[str, Setting], *, level: str) -> None:
        self._read_dict(node, path, target)
        allowed = {"top": (*WORKER_KEYS, *CONNECTOR_MM2_ONLY), "cluster": WORKER_KEYS, "flow": CONNECTOR_MM2_ONLY}[
            level
        ]
        for key, setting in target.items():
            if not matches_any(key, allowed):
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
                        for m in difflib.get_close_matches(key, MM2_ONLY_EXAMPLES, n=2, cutoff=0.6)
                        if matches_any(m, allowed)
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
    return build(draft)
