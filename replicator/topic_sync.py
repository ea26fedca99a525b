"""Remote topics: discover source topics, create them on the target, keep partitions and configs in step."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ClusterMetadata,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    ResourceType,
)

from mirrordrill.replicator.filters import ConfigPropertyFilter, TopicSelector

log = logging.getLogger(__name__)

# configs set on the topic itself (not broker or default values); the client reports enum or int
_TOPIC_LEVEL = (ConfigSource.DYNAMIC_TOPIC_CONFIG, ConfigSource.DYNAMIC_TOPIC_CONFIG.value)


@dataclass
class SourceTopic:
    name: str
    partitions: int
    configs: dict[str, str] = field(default_factory=dict)  # explicitly set (non-default) configs


@dataclass
class SyncResult:
    """What one pass changed on the target."""

    selected: dict[str, str] = field(default_factory=dict)  # source topic -> remote topic
    created: list[str] = field(default_factory=list)
    partitions_added: dict[str, int] = field(default_factory=dict)
    configs_updated: dict[str, dict[str, str]] = field(default_factory=dict)
    partitions: dict[str, int] = field(default_factory=dict)  # source topic -> partition count


def _result(futures: dict[Any, Any], timeout_s: float, ignore: tuple[int, ...] = ()) -> None:
    for _, fut in futures.items():
        try:
            fut.result(timeout=timeout_s)
        except KafkaException as e:
            if e.args[0].code() not in ignore:
                raise


class TopicSync:
    """MM2's topic handling for one flow: selection, creation, partition increases, config sync."""

    def __init__(self, selector: TopicSelector, source_admin: AdminClient, target_admin: AdminClient,
                 config_filter: ConfigPropertyFilter | None, replication_factor: int, timeout_s: float = 30.0):
        self.selector = selector
        self.source_admin = source_admin
        self.target_admin = target_admin
        self.config_filter = config_filter  # None: config sync disabled
        self.replication_factor = replication_factor
        self.timeout_s = timeout_s

    def source_topics(self) -> list[SourceTopic]:
        """Topics on the source this flow replicates, with partition counts (and configs if synced)."""
        md = self.source_admin.list_topics(timeout=self.timeout_s)
        topics = [SourceTopic(name, len(t.partitions)) for name, t in md.topics.items()
                  if t.error is None and self.selector.should_replicate_topic(name)]
        if self.config_filter is not None and topics:
            for t, cfg in zip(topics, self._configs(self.source_admin, [t.name for t in topics]), strict=True):
                t.configs = {k: v for k, v in cfg.items() if self.config_filter.should_replicate_config_property(k)}
        return sorted(topics, key=lambda t: t.name)

    def _configs(self, admin: AdminClient, names: list[str]) -> list[dict[str, str]]:
        resources = [ConfigResource(ResourceType.TOPIC, n) for n in names]
        futures = admin.describe_configs(resources, request_timeout=self.timeout_s)
        out = []
        for r in resources:
            entries: dict[str, ConfigEntry] = futures[r].result(timeout=self.timeout_s)
            out.append({k: e.value for k, e in entries.items()
                        if e.source in _TOPIC_LEVEL and e.value is not None})
        return out

    def _target_replication_factor(self, md: ClusterMetadata) -> int:
        return max(1, min(self.replication_factor, len(md.brokers)))

    def sync(self) -> SyncResult:
        """One pass: make the target match the source for every selected topic."""
        result = SyncResult()
        sources = self.source_topics()
        target_md = self.target_admin.list_topics(timeout=self.timeout_s)
        rf = self._target_replication_factor(target_md)
        to_create, to_grow = [], {}
        for t in sources:
            remote = self.selector.remote_topic(t.name)
            result.selected[t.name] = remote
            result.partitions[t.name] = t.partitions
            existing = target_md.topics.get(remote)
            if existing is None or existing.error is not None:
                to_create.append(NewTopic(remote, t.partitions, rf, config=dict(t.configs)))
                result.created.append(remote)
            elif len(existing.partitions) < t.partitions:
                to_grow[remote] = t.partitions
        if to_create:
            log.info("creating remote topics %s", [n.topic for n in to_create])
            _result(self.target_admin.create_topics(to_create, request_timeout=self.timeout_s), self.timeout_s,
                    ignore=(KafkaError.TOPIC_ALREADY_EXISTS,))
        if to_grow:
            log.info("adding partitions %s", to_grow)
            _result(self.target_admin.create_partitions([NewPartitions(n, c) for n, c in to_grow.items()],
                                                        request_timeout=self.timeout_s), self.timeout_s,
                    ignore=(KafkaError.INVALID_PARTITIONS,))
            result.partitions_added = to_grow
        if self.config_filter is not None:
            self._sync_configs(sources, result)
        return result

    def _sync_configs(self, sources: list[SourceTopic], result: SyncResult) -> None:
        existing = [t for t in sources if self.selector.remote_topic(t.name) not in result.created]
        if not existing:
            return
        remotes = [self.selector.remote_topic(t.name) for t in existing]
        for t, remote, current in zip(existing, remotes, self._configs(self.target_admin, remotes), strict=True):
            changed = {k: v for k, v in t.configs.items() if current.get(k) != v}
            if not changed:
                continue
            resource = ConfigResource(ResourceType.TOPIC, remote, incremental_configs=[
                ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in changed.items()])
            _result(self.target_admin.incremental_alter_configs([resource]), self.timeout_s)
            result.configs_updated[remote] = changed
            log.info("updated configs of %s: %s", remote, changed)
