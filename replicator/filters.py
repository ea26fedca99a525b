"""Which topics, consumer groups and topic configs a flow replicates (MM2's filters).

MM2 joins a comma-separated regex list into one alternation and requires the whole name to
match (Java ``Matcher.matches()``); an empty list matches nothing. We do the same with
``re.fullmatch``. Java and Python regexes agree on the constructs topic filters use; a
pattern Python cannot compile is rejected when the configuration is loaded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from mirrordrill.replicator.policy import DefaultReplicationPolicy, ReplicationPolicy

DEFAULT_TOPICS: tuple[str, ...] = (".*",)
DEFAULT_TOPICS_EXCLUDE: tuple[str, ...] = (r".*[\-\.]internal", r".*\.replica", r"__.*")
DEFAULT_GROUPS: tuple[str, ...] = (".*",)
DEFAULT_GROUPS_EXCLUDE: tuple[str, ...] = (r"console-consumer-.*", r"connect-.*", r"__.*")
# As in Kafka's DefaultConfigPropertyFilter (checked against apache/kafka trunk): throttles,
# timestamp handling and durability knobs are the target cluster's business.
DEFAULT_CONFIG_PROPERTIES_EXCLUDE: tuple[str, ...] = (
    r"follower\.replication\.throttled\.replicas",
    r"leader\.replication\.throttled\.replicas",
    r"message\.timestamp\.difference\.max\.ms",
    r"message\.timestamp\.type",
    r"unclean\.leader\.election\.enable",
    r"min\.insync\.replicas",
)


def compile_pattern_list(patterns: Sequence[str]) -> re.Pattern[str] | None:
    """One alternation of all patterns, or None for an empty list (which matches nothing)."""
    if not patterns:
        return None
    return re.compile("|".join(patterns))


def _matches(pattern: re.Pattern[str] | None, name: str) -> bool:
    return pattern is not None and pattern.fullmatch(name) is not None


@dataclass(frozen=True)
class _IncludeExclude:
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    _include_re: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    _exclude_re: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "include", tuple(self.include))
        object.__setattr__(self, "exclude", tuple(self.exclude))
        object.__setattr__(self, "_include_re", compile_pattern_list(self.include))
        object.__setattr__(self, "_exclude_re", compile_pattern_list(self.exclude))

    def _accepts(self, name: str) -> bool:
        # Excludes win over includes, as in MM2.
        return _matches(self._include_re, name) and not _matches(self._exclude_re, name)


@dataclass(frozen=True)
class TopicFilter(_IncludeExclude):
    """``topics`` / ``topics.exclude`` (MM2's DefaultTopicFilter)."""

    include: tuple[str, ...] = DEFAULT_TOPICS
    exclude: tuple[str, ...] = DEFAULT_TOPICS_EXCLUDE

    def should_replicate_topic(self, topic: str) -> bool:
        """True when the topic matches an include pattern and no exclude pattern."""
        return self._accepts(topic)


@dataclass(frozen=True)
class GroupFilter(_IncludeExclude):
    """``groups`` / ``groups.exclude`` (MM2's DefaultGroupFilter)."""

    include: tuple[str, ...] = DEFAULT_GROUPS
    exclude: tuple[str, ...] = DEFAULT_GROUPS_EXCLUDE

    def should_replicate_group(self, group: str) -> bool:
        """True when the group matches an include pattern and no exclude pattern."""
        return self._accepts(group)


@dataclass(frozen=True)
class ConfigPropertyFilter:
    """``config.properties.exclude`` and ``use.defaults.from`` (MM2's DefaultConfigPropertyFilter).

    As in MM2, a configured exclude list replaces the default list rather than extending it.
    """

    exclude: tuple[str, ...] = DEFAULT_CONFIG_PROPERTIES_EXCLUDE
    use_defaults_from: Literal["source", "target"] = "target"
    _exclude_re: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "exclude", tuple(self.exclude))
        object.__setattr__(self, "_exclude_re", compile_pattern_list(self.exclude))

    def should_replicate_config_property(self, name: str) -> bool:
        """True unless the topic config property matches an exclude pattern."""
        return not _matches(self._exclude_re, name)

    def should_replicate_source_default(self, name: str) -> bool:
        """True when a property left at its default on the source is copied, not left to the target."""
        return self.use_defaults_from == "source"


@dataclass(frozen=True)
class TopicSelector:
    """The whole per-flow topic decision of MM2's ``MirrorSourceConnector.shouldReplicateTopic``.

    A topic is replicated when the filter accepts it (or it is a heartbeats topic and
    heartbeat replication is on), it is not internal, and its name shows no cycle.

    ``restore_history`` (ours; MM2 has nothing like it) adds the one exception to the cycle
    rule: the source's copies of the target's own topics (``<target>.<topic>`` where the
    filter accepts ``<topic>``, one hop only) are copied back under their original names. It
    is the failback that rebuilds a wiped primary with the history it held before the
    incident, as Cluster Linking's reverse-and-truncate does; every other topic keeps MM2's rule.
    """

    source_alias: str
    target_alias: str
    topic_filter: TopicFilter = field(default_factory=TopicFilter)
    policy: ReplicationPolicy = field(default_factory=DefaultReplicationPolicy)
    heartbeats_replication_enabled: bool = True
    restore_history: bool = False

    def restored_topic(self, topic: str) -> str | None:
        """With ``restore_history``: the original name of the target's own topic this is a copy of, else None."""
        if not self.restore_history or self.policy.topic_source(topic) != self.target_alias:
            return None
        original = self.policy.upstream_topic(topic)
        if (original is None or original == topic or self.policy.topic_source(original) is not None
                or self.policy.is_internal_topic(original) or self.policy.is_heartbeats_topic(original)):
            return None  # a local topic of the target's, copied straight from it, is all that goes back
        return original if self.topic_filter.should_replicate_topic(original) else None

    def should_replicate_topic(self, topic: str) -> bool:
        """True when this flow copies ``topic`` from the source to the target."""
        if self.restored_topic(topic) is not None:
            return True
        selected = self.topic_filter.should_replicate_topic(topic) or (
            self.heartbeats_replication_enabled and self.policy.is_heartbeats_topic(topic)
        )
        return (
            selected and not self.policy.is_internal_topic(topic) and not self.policy.is_cycle(topic, self.target_alias)
        )

    def should_checkpoint_topic(self, topic: str) -> bool:
        """True when group offsets on this topic are checkpointed (MM2 uses the topic filter only)."""
        return self.topic_filter.should_replicate_topic(topic) or self.restored_topic(topic) is not None

    def remote_topic(self, topic: str) -> str:
        """The name ``topic`` gets on the target cluster."""
        restored = self.restored_topic(topic)
        return restored if restored is not None else self.policy.format_remote_topic(self.source_alias, topic)
