"""Reading MirrorMaker 2's dedicated-mode properties (``connect-mirror-maker.properties``).

Every line is sorted by its key (top level, ``<cluster>.``, ``<source>-><target>.``) into a
``Draft`` with its line number, by the rules of ``mm2_keys``; values are converted from text
by Kafka's ConfigDef rules.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, get_origin

from pydantic import BaseModel

from mirrordrill.primitives.config_errors import ConfigError, ConfigWarning
from mirrordrill.primitives.properties_syntax import PropertyLine, parse_mm2_list, read_properties
from mirrordrill.primitives.redaction import is_secret_key
from mirrordrill.replicator.config.draft import ClusterDraft, Draft, Location, Setting, build, field_annotation
from mirrordrill.replicator.config.flow import FlowConfig
from mirrordrill.replicator.config.mm2_keys import (
    CONNECTOR_MM2_ONLY,
    DEFAULT_ONLY,
    FLOW_DICTS,
    FLOW_PROPERTY_KEYS,
    GLOBAL_PROPERTY_KEYS,
    MIRRORDRILL_PREFIX,
    MM2_ONLY_EXAMPLES,
    WORKER_KEYS,
    is_cluster_setting,
    matches_any,
    mm2_only_message,
    rejected_reason,
)
from mirrordrill.replicator.config.settings import ReplicatorConfig
from mirrordrill.replicator.config.validation import ALIAS_PATTERN, is_client_setting


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


def _warn_about_syntax(draft: Draft, prop: PropertyLine, loc: Location) -> None:
    """Warnings for a line whose Java properties syntax reads otherwise than it looks."""
    if _SETTING_VALUE_HINT.search(prop.value):
        draft.warn(
            loc, "properties files have no end-of-line comments; the '#' or '!' text is part of the value"
        )
    if prop.dropped_escapes:
        dropped = ", ".join(sorted(set(prop.dropped_escapes)))
        # A JAAS config or password is named, never echoed: warnings reach logs and terminals.
        seen = "a value without them" if is_secret_key(prop.key) else f"the value {prop.value!r}"
        draft.warn(
            loc,
            f"Java properties syntax drops the backslash of {dropped}; MirrorMaker 2 sees {seen}. "
            "Write a double backslash to keep a regex escape",
        )
    if not prop.raw.isascii():
        draft.warn(
            loc, "MirrorMaker 2 reads properties files as ISO-8859-1; write non-ASCII characters as \\uXXXX"
        )


def _is_top_level_key(key: str) -> bool:
    """A key read as a top-level setting, unless it is an alias's cluster setting (``_classify`` asks that first)."""
    return (
        key in FLOW_PROPERTY_KEYS
        or key in GLOBAL_PROPERTY_KEYS
        or key in DEFAULT_ONLY
        or is_client_setting(key)
        or rejected_reason(key) is not None
        or key in ("bootstrap.servers",)
        or key.startswith(("consumer.", "producer.", "admin.", MIRRORDRILL_PREFIX))
        or matches_any(key, WORKER_KEYS)
        or matches_any(key, CONNECTOR_MM2_ONLY)
    )


class _PropertiesReader:
    """Sorts the lines of an MM2 properties file into a draft."""

    def __init__(self, text: str, source: str) -> None:
        self.source = source
        self.lines = read_properties(text, source)
        self.aliases: list[str] = []
        self.draft: Draft  # set by read(), which every other method runs under

    def read(self) -> Draft:
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
        draft = Draft(self.source, Location("clusters", clusters.line), "properties")
        draft.warnings.extend(early_warnings)
        self.draft = draft
        self._read_clusters(clusters)
        for prop in sorted(by_key.values(), key=lambda p: p.line):
            if prop.key == "clusters":
                continue
            loc = Location(prop.key, prop.line)
            _warn_about_syntax(self.draft, prop, loc)
            self._classify(prop, loc)
        for flow in draft.flows:
            # MM2 replicates a pair only when A->B.enabled = true.
            flow.fields.setdefault(
                "enabled", Setting(False, Location(f"{flow.source}->{flow.target}.enabled", flow.loc.line))
            )
        return draft

    def _read_clusters(self, prop: PropertyLine) -> None:
        loc = Location(prop.key, prop.line)
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
            self.draft.clusters[alias] = ClusterDraft(loc)
        # Longest first, so alias "us" never captures keys of alias "us.east".
        self.aliases = sorted(aliases, key=len, reverse=True)

    # -- classification -------------------------------------------------------------
    def _classify(self, prop: PropertyLine, loc: Location) -> None:
        key = prop.key
        if "->" in key:
            self._flow_key(prop, loc)
            return
        alias = next((a for a in self.aliases if key.startswith(a + ".")), None)
        rest = key[len(alias) + 1 :] if alias is not None else ""
        if alias is not None and is_cluster_setting(rest):
            self._cluster_key(alias, rest, prop, loc)
        elif _is_top_level_key(key):
            self._top_level_key(prop, loc)
        elif alias is not None:
            self._cluster_key(alias, rest, prop, loc)
        else:
            self._unknown_top_level(prop, loc)

    def _convert(self, model: type[BaseModel], name: str, prop: PropertyLine, loc: Location) -> Any:
        if name == "replication_policy_class":
            return prop.value.strip()
        try:
            return _from_text(field_annotation(model, name), prop.value)
        except ValueError as exc:
            raise self.draft.error(f"{exc}, got {prop.value.strip()!r}", loc) from None

    def _top_level_key(self, prop: PropertyLine, loc: Location) -> None:
        draft, key = self.draft, prop.key
        reason = rejected_reason(key)
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
            draft.globals[name] = Setting(self._convert(ReplicatorConfig, name, prop, loc), loc)
            return
        if key in FLOW_PROPERTY_KEYS:
            name = FLOW_PROPERTY_KEYS[key]
            draft.defaults[name] = Setting(self._convert(FlowConfig, name, prop, loc), loc)
            return
        if key in DEFAULT_ONLY:
            self._default_only(prop, loc)
            return
        if is_client_setting(key):
            draft.client[key] = Setting(prop.value.strip(), loc)
            return
        if matches_any(key, WORKER_KEYS) or matches_any(key, CONNECTOR_MM2_ONLY):
            draft.mm2_only[key] = Setting(prop.value.strip(), loc)
            draft.warn(loc, mm2_only_message(key))
            return
        if key.startswith(("consumer.", "producer.", "admin.")):
            kind, rest = key.split(".", 1)
            raise draft.error(
                f"MirrorMaker 2 silently ignores top-level {kind}.* settings",
                loc,
                valid=f"<cluster>.{kind}.{rest} or <source>-><target>.{kind}.{rest}",
            )
        self._unknown_top_level(prop, loc)

    def _default_only(self, prop: PropertyLine, loc: Location) -> None:
        expected = DEFAULT_ONLY[prop.key]
        if prop.value.strip() != expected:
            raise self.draft.error(
                f"{prop.value.strip()!r} is not supported: the mirrordrill replicator cannot load Java classes "
                "and copies records as raw bytes",
                loc,
                valid=expected,
            )

    def _unknown_top_level(self, prop: PropertyLine, loc: Location) -> None:
        key = prop.key
        head, _, rest = key.partition(".")
        if rest and is_cluster_setting(rest):
            raise self.draft.error(
                f"cluster {head!r} is not in clusters = {', '.join(self.draft.clusters)}",
                loc,
                suggestions=[f"{a}.{rest}" for a in difflib.get_close_matches(head, list(self.draft.clusters), n=2)],
                valid="add it to 'clusters', or use one of " + ", ".join(self.draft.clusters),
            )
        candidates = [*FLOW_PROPERTY_KEYS, *GLOBAL_PROPERTY_KEYS, *MM2_ONLY_EXAMPLES, "clusters", "security.protocol"]
        candidates += [f"{alias}.bootstrap.servers" for alias in self.draft.clusters]
        raise self.draft.error(
            "unknown key",
            loc,
            suggestions=difflib.get_close_matches(key, candidates, n=3, cutoff=0.6),
            valid="MirrorMaker 2 settings (topics, groups, replication.factor, …), <cluster>.bootstrap.servers, "
            "<cluster>.consumer.*/producer.*/admin.*, <source>-><target>.<setting>, mirrordrill.*",
        )

    def _cluster_key(self, alias: str, rest: str, prop: PropertyLine, loc: Location) -> None:
        draft = self.draft
        cluster = draft.clusters[alias]
        value = prop.value.strip()
        if rest == "bootstrap.servers":
            cluster.fields["bootstrap_servers"] = Setting(parse_mm2_list(value), loc)
            return
        if is_client_setting(rest):
            cluster.dicts["client"][rest] = Setting(value, loc)
            return
        head, _, sub = rest.partition(".")
        if head in FLOW_DICTS and rest not in ("admin.listeners",):
            if not sub:
                raise draft.error(f"missing the {head} setting name", loc, valid=f"{alias}.{head}.<setting>")
            cluster.dicts[head][sub] = Setting(value, loc)
            return
        if rest in DEFAULT_ONLY and rest.endswith("converter"):
            self._default_only(PropertyLine(rest, prop.value, prop.line, prop.raw), loc)
            return
        if matches_any(rest, WORKER_KEYS):
            cluster.dicts["mm2_only"][rest] = Setting(value, loc)
            draft.warn(loc, mm2_only_message(rest))
            return
        candidates = [f"{alias}.{name}" for name in ("bootstrap.servers", "security.protocol")]
        candidates += [f"{alias}.{kind}.{sub or rest}" for kind in FLOW_DICTS]
        flow_like = [f"{alias}->{t}.{rest}" for t in draft.clusters if t != alias and rest in FLOW_PROPERTY_KEYS]
        raise draft.error(
            f"MirrorMaker 2 passes only bootstrap.servers, security.protocol, ssl.* and sasl.* from "
            f"'{alias}.<setting>' to its clients, and {rest!r} is no Connect worker setting",
            loc,
            suggestions=difflib.get_close_matches(prop.key, candidates, n=3, cutoff=0.6) + flow_like[:2],
            valid=f"{alias}.consumer.{rest}, {alias}.producer.{rest} or {alias}.admin.{rest} for a client setting",
        )

    def _flow_key(self, prop: PropertyLine, loc: Location) -> None:
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
            flow.fields[name] = Setting(self._convert(FlowConfig, name, prop, loc), loc)
            return
        if setting == "mirrordrill.starting.offsets":
            raise draft.error(
                "the start position is written the MirrorMaker 2 way, so that MM2 starts at the same place",
                loc,
                valid=f"{prefix}consumer.auto.offset.reset = earliest | latest",
            )
        if setting in GLOBAL_PROPERTY_KEYS and setting != "mirrordrill.checkpoint.dir":
            what = {"mirrordrill.spark.master": "one Spark session runs every flow, so the master is set once",
                    "mirrordrill.spark.jars": "one Spark session runs every flow, so its jars are set once",
                    "mirrordrill.metrics.port": "one process serves every flow's metrics, so its port is set once",
                    "mirrordrill.driver.jit": "one driver JVM runs every flow, so its JIT is set once",
                    }[setting]
            raise draft.error(what, loc, valid=setting)
        reason = rejected_reason(setting)
        if reason is not None:
            raise draft.error(f"not supported: {reason}", loc)
        if setting in DEFAULT_ONLY:
            self._default_only(PropertyLine(setting, prop.value, prop.line, prop.raw), loc)
            return
        head, _, sub = setting.partition(".")
        if head in FLOW_DICTS:
            if not sub:
                raise draft.error(f"missing the {head} setting name", loc, valid=f"{prefix}{head}.<setting>")
            flow.dicts[head][sub] = Setting(value, loc)
            return
        if head in ("source", "target") and sub.split(".", 1)[0] in (*FLOW_DICTS, "cluster"):
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
        if matches_any(setting, CONNECTOR_MM2_ONLY):
            flow.dicts["mm2_only"][setting] = Setting(value, loc)
            draft.warn(loc, mm2_only_message(setting))
            return
        candidates = [prefix + name for name in FLOW_PROPERTY_KEYS]
        raise draft.error(
            "unknown key",
            loc,
            suggestions=difflib.get_close_matches(prop.key, candidates, n=3, cutoff=0.6),
            valid=f"{prefix}<setting> where <setting> is a MirrorMaker 2 connector setting (topics, groups, "
            "emit.checkpoints.enabled, …), consumer.*/producer.*/admin.*, or mirrordrill.*",
        )


def parse_mm2_properties(text: str, source_name: str = "<properties>") -> ReplicatorConfig:
    """Load an MM2 dedicated-mode properties file (``connect-mirror-maker.properties``)."""
    draft = _PropertiesReader(text, source_name).read()
    return build(draft)
