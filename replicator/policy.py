"""Replication policies: how remote topics are named and how cycles are prevented.

Mirrors the contract of MirrorMaker 2's ``ReplicationPolicy`` (``connect/mirror-client``):
``DefaultReplicationPolicy`` names a remote topic ``<source alias><separator><topic>`` so a
topic's name records every cluster it came through; ``IdentityReplicationPolicy`` keeps
names unchanged, so it cannot tell by name where a topic came from.

Cycle prevention follows MM2's ``MirrorSourceConnector.isCycle`` (walk the upstream chain
of the topic name and stop if it reaches the target). For the identity policy, where names
carry no history, we add what MM2 lacks: a record header (``PROVENANCE_HEADER``) listing
the clusters a record has already passed through.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

PROVENANCE_HEADER = "mirrordrill.provenance"
"""Record header whose value is the comma-joined list of clusters the record came through."""

DEFAULT_SEPARATOR = "."
HEARTBEATS_TOPIC = "heartbeats"

DEFAULT_POLICY_CLASS = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
IDENTITY_POLICY_CLASS = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"

# Every spelling accepted for `replication.policy.class`, mapped to our short name.
POLICY_NAMES: Mapping[str, str] = {
    "default": "default",
    "DefaultReplicationPolicy": "default",
    DEFAULT_POLICY_CLASS: "default",
    "identity": "identity",
    "IdentityReplicationPolicy": "identity",
    IDENTITY_POLICY_CLASS: "identity",
}
POLICY_CLASSES: Mapping[str, str] = {"default": DEFAULT_POLICY_CLASS, "identity": IDENTITY_POLICY_CLASS}

HeaderValue = bytes | bytearray | str | None
Headers = Mapping[str, HeaderValue] | Iterable[tuple[str, HeaderValue]]


@runtime_checkable
class ReplicationPolicy(Protocol):
    """The naming and cycle rules a replication flow follows (MM2's ``ReplicationPolicy``)."""

    @property
    def separator(self) -> str: ...

    def format_remote_topic(self, source_alias: str, topic: str) -> str: ...

    def topic_source(self, topic: str) -> str | None: ...

    def upstream_topic(self, topic: str) -> str | None: ...

    def original_topic(self, topic: str) -> str: ...

    def upstream_chain(self, topic: str) -> list[str]: ...

    def heartbeats_topic(self) -> str: ...

    def offset_syncs_topic(self, cluster_alias: str) -> str: ...

    def checkpoints_topic(self, cluster_alias: str) -> str: ...

    def is_heartbeats_topic(self, topic: str) -> bool: ...

    def is_checkpoints_topic(self, topic: str) -> bool: ...

    def is_mm2_internal_topic(self, topic: str) -> bool: ...

    def is_internal_topic(self, topic: str) -> bool: ...

    def is_cycle(self, topic: str, target_alias: str) -> bool: ...

    def should_replicate(
        self, topic: str, source_alias: str, target_alias: str, headers: Headers | None = None
    ) -> bool: ...


def _java_split(text: str, separator: str) -> list[str]:
    # Java's String.split drops trailing empty strings; MM2's topicSource relies on that
    # ("A." is not a remote topic, "A.b." has source "A").
    parts = text.split(separator)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


@dataclass(frozen=True)
class DefaultReplicationPolicy:
    """Remote topics are named ``<source alias><separator><topic>`` (MM2's default).

    ``internal_topic_separator_enabled`` mirrors ``replication.policy.internal.topic.separator.enabled``:
    when false, checkpoints and offset-syncs topics keep ``.`` whatever the separator.
    """

    separator: str = DEFAULT_SEPARATOR
    internal_topic_separator_enabled: bool = True

    def __post_init__(self) -> None:
        if not self.separator:
            raise ValueError("replication policy separator must not be empty")

    # -- naming -----------------------------------------------------------------------
    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        """Name of ``topic`` from cluster ``source_alias`` on the target cluster."""
        return f"{source_alias}{self.separator}{topic}"

    def topic_source(self, topic: str) -> str | None:
        """Alias of the cluster this topic was replicated from, or None for a local topic."""
        parts = _java_split(topic, self.separator)
        return parts[0] if len(parts) >= 2 else None

    def upstream_topic(self, topic: str) -> str | None:
        """Name of this topic on the cluster it was replicated from, or None if local."""
        source = self.topic_source(topic)
        if source is None:
            return None
        return topic[len(source) + len(self.separator) :]

    def original_topic(self, topic: str) -> str:
        """Name of the topic on the cluster where it was first produced (after any hops)."""
        current = topic
        while True:
            upstream = self.upstream_topic(current)
            if upstream is None or upstream == current:
                return current
            current = upstream

    def upstream_chain(self, topic: str) -> list[str]:
        """Clusters this topic came through by name, nearest first (``A.B.t`` → ``[A, B]``)."""
        chain: list[str] = []
        current = topic
        while True:
            source = self.topic_source(current)
            if source is None:
                return chain
            chain.append(source)
            upstream = self.upstream_topic(current)
            if upstream is None or upstream == current:
                return chain
            current = upstream

    # -- internal topics --------------------------------------------------------------
    def _internal_separator(self) -> str:
        return self.separator if self.internal_topic_separator_enabled else "."

    def _internal_suffix(self) -> str:
        return self._internal_separator() + "internal"

    def _checkpoints_suffix(self) -> str:
        return self._internal_separator() + "checkpoints" + self._internal_suffix()

    def heartbeats_topic(self) -> str:
        """The heartbeats topic (``heartbeats``), emitted on the target of each flow."""
        return HEARTBEATS_TOPIC

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        """``mm2-offset-syncs.<alias>.internal``; MM2 passes the flow's target alias."""
        sep = self._internal_separator()
        return f"mm2-offset-syncs{sep}{cluster_alias}{self._internal_suffix()}"

    def checkpoints_topic(self, cluster_alias: str) -> str:
        """``<alias>.checkpoints.internal`` on the target; MM2 passes the flow's source alias."""
        return cluster_alias + self._checkpoints_suffix()

    def is_heartbeats_topic(self, topic: str) -> bool:
        """True for ``heartbeats`` and its replicas (``A.heartbeats``, ``B.A.heartbeats``)."""
        return self.original_topic(topic) == self.heartbeats_topic()

    def is_checkpoints_topic(self, topic: str) -> bool:
        """True for any ``<alias>.checkpoints.internal`` topic."""
        return topic.endswith(self._checkpoints_suffix())

    def is_mm2_internal_topic(self, topic: str) -> bool:
        """True for MM2's own internal topics (offset syncs, checkpoints, Connect storage)."""
        return topic.endswith(self._internal_suffix())

    def is_internal_topic(self, topic: str) -> bool:
        """True for topics never replicated: MM2 internals, Kafka's ``__*``/``.*``, ``*-internal``."""
        kafka_internal = topic.startswith("__") or topic.startswith(".")
        connect_internal = topic.endswith("-internal") or topic.endswith(".internal")
        return self.is_mm2_internal_topic(topic) or kafka_internal or connect_internal

    # -- cycles -----------------------------------------------------------------------
    def is_cycle(self, topic: str, target_alias: str) -> bool:
        """True when the topic's name shows it already came from ``target_alias`` (MM2's isCycle)."""
        current = topic
        while True:
            source = self.topic_source(current)
            if source is None:
                return False
            if source == target_alias:
                return True
            upstream = self.upstream_topic(current)
            # Identity-like policies return the topic itself: the name holds no more history.
            if upstream is None or upstream == current:
                return False
            current = upstream

    def should_replicate(
        self, topic: str, source_alias: str, target_alias: str, headers: Headers | None = None
    ) -> bool:
        """False when copying this topic (or record, given its headers) would close a cycle."""
        if source_alias == target_alias:
            return False
        if self.is_cycle(topic, target_alias):
            return False
        return headers is None or not record_would_cycle(provenance_from_headers(headers), target_alias)


@dataclass(frozen=True)
class IdentityReplicationPolicy(DefaultReplicationPolicy):
    """Remote topics keep their names; heartbeats are still renamed like the default policy.

    ``source_cluster_alias`` mirrors MM2's ``source.cluster.alias``: the answer to
    ``topic_source`` for every non-heartbeat topic. Names cannot reveal cycles, so a flow on a
    cycle needs the provenance header (see ``should_replicate``).
    """

    source_cluster_alias: str | None = None

    def _looks_like_heartbeat(self, topic: str) -> bool:
        return topic.endswith(self.heartbeats_topic())

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        """The topic name unchanged, except heartbeats (``A.heartbeats``)."""
        if self._looks_like_heartbeat(topic):
            return super().format_remote_topic(source_alias, topic)
        return topic

    def topic_source(self, topic: str) -> str | None:
        """The configured source alias (names carry no history), except for heartbeats."""
        if self._looks_like_heartbeat(topic):
            return super().topic_source(topic)
        return self.source_cluster_alias

    def upstream_topic(self, topic: str) -> str | None:
        """The topic itself (any topic may be remote), except for heartbeats."""
        if self._looks_like_heartbeat(topic):
            return super().upstream_topic(topic)
        return topic


def policy_from_name(
    name: str,
    separator: str = DEFAULT_SEPARATOR,
    *,
    internal_topic_separator_enabled: bool = True,
    source_cluster_alias: str | None = None,
) -> DefaultReplicationPolicy:
    """Build a policy from ``default``/``identity`` or MM2's Java class names."""
    short = POLICY_NAMES.get(name.strip())
    if short is None:
        valid = ", ".join(POLICY_NAMES)
        raise ValueError(f"unknown replication policy {name!r}; valid: {valid}")
    if short == "identity":
        return IdentityReplicationPolicy(
            separator=separator,
            internal_topic_separator_enabled=internal_topic_separator_enabled,
            source_cluster_alias=source_cluster_alias,
        )
    return DefaultReplicationPolicy(
        separator=separator, internal_topic_separator_enabled=internal_topic_separator_enabled
    )


# -- provenance header -------------------------------------------------------------------
def _as_text(value: HeaderValue) -> str:
    if value is None:
        return ""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8")
    return value


def parse_provenance(header_value: HeaderValue) -> list[str]:
    """Clusters listed in a provenance header value, oldest first."""
    return [alias.strip() for alias in _as_text(header_value).split(",") if alias.strip()]


def provenance_from_headers(headers: Headers) -> list[str]:
    """The provenance chain carried by a record's headers (mapping or ``(key, value)`` pairs)."""
    items = headers.items() if isinstance(headers, Mapping) else headers
    chain: list[str] = []
    for key, value in items:
        # Kafka allows repeated header keys; treat every copy as part of the history.
        if key == PROVENANCE_HEADER:
            chain.extend(parse_provenance(value))
    return chain


def add_provenance(existing_header_value: HeaderValue, source_alias: str) -> bytes:
    """The header value to write on the target: the existing chain plus ``source_alias``."""
    if not source_alias or "," in source_alias or source_alias != source_alias.strip():
        raise ValueError(f"invalid cluster alias for provenance header: {source_alias!r}")
    return ",".join([*parse_provenance(existing_header_value), source_alias]).encode("utf-8")


def record_would_cycle(header_value: HeaderValue | list[str], target_alias: str) -> bool:
    """True when a record with this provenance already passed through ``target_alias``."""
    chain = header_value if isinstance(header_value, list) else parse_provenance(header_value)
    return target_alias in chain
