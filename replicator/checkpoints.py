"""Consumer-group checkpoints (MM2 format) and the optional sync of group offsets on the target."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from replicator.filters import GroupFilter, TopicSelector
from replicator.mm2_format import Checkpoint
from replicator.offset_index import OffsetIndex
from replicator.planted_faults import CheckpointFault

log = logging.getLogger(__name__)


def ensure_internal_topic(admin: AdminClient, name: str, replication_factor: int, timeout_s: float = 30.0) -> None:
    """Create a compacted single-partition internal topic if it is missing."""
    md = admin.list_topics(timeout=timeout_s)
    if name in md.topics and md.topics[name].error is None:
        return
    rf = max(1, min(replication_factor, len(md.brokers)))
    fut = admin.create_topics([NewTopic(name, 1, rf, config={"cleanup.policy": "compact"})],
                              request_timeout=timeout_s)[name]
    try:
        fut.result(timeout=timeout_s)
    except KafkaException as e:
        if "already exists" not in str(e).lower():
            raise


@dataclass
class GroupOffsets:
    group: str
    offsets: dict[tuple[str, int], int]  # source (topic, partition) -> committed offset


@dataclass
class CheckpointEmitter:
    """Translates the source's committed group offsets and writes checkpoints to the target."""

    source_alias: str
    selector: TopicSelector
    group_filter: GroupFilter
    source_admin: AdminClient
    target_admin: AdminClient
    target_producer: Producer
    index: OffsetIndex
    topic: str  # the checkpoints topic on the target
    replication_factor: int
    sync_group_offsets: bool
    timeout_s: float = 30.0
    fault: CheckpointFault | None = None  # planted by the mutation suite (``replicator.planted_faults``); None in real runs
    _last: dict[tuple[str, str, int], Checkpoint] = field(default_factory=dict, init=False, repr=False)

    def source_group_offsets(self) -> list[GroupOffsets]:
        """Committed offsets on the source of every group the flow's group filter selects."""
        listing = self.source_admin.list_consumer_groups(request_timeout=self.timeout_s).result(timeout=self.timeout_s)
        groups = sorted(g.group_id for g in listing.valid if self.group_filter.should_replicate_group(g.group_id))
        out = []
        for g in groups:
            fut = self.source_admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g)],
                                                                request_timeout=self.timeout_s)[g]
            res = fut.result(timeout=self.timeout_s)
            offsets = {(tp.topic, tp.partition): tp.offset for tp in res.topic_partitions
                       if tp.offset >= 0 and tp.error is None and self.selector.should_checkpoint_topic(tp.topic)}
            if offsets:
                out.append(GroupOffsets(g, offsets))
        return out

    def emit(self) -> list[Checkpoint]:
        """One checkpoint pass; returns the checkpoints written."""
        ensure_internal_topic(self.target_admin, self.topic, self.replication_factor, self.timeout_s)
        groups = self.source_group_offsets()
        wanted = {(self.selector.remote_topic(t), p) for g in groups for (t, p) in g.offsets}
        target_topics = self.target_admin.list_topics(timeout=self.timeout_s).topics
        wanted = {(t, p) for t, p in wanted if t in target_topics and p in target_topics[t].partitions}
        self.index.refresh(sorted(wanted))
        written = []
        for g in groups:
            for (topic, partition), committed in sorted(g.offsets.items()):
                remote = self.selector.remote_topic(topic)
                if (remote, partition) not in wanted:
                    continue
                down = self.index.translate(remote, partition, committed, refresh=False)
                key = (g.group, remote, partition)
                if self.fault is not None:
                    if self.fault.frozen and key in self._last:
                        continue  # planted: the first checkpoint is the last one
                    down = self.fault.downstream(down)
                cp = Checkpoint(g.group, remote, partition, committed, down, "")
                if self._last.get(key) == cp:
                    continue
                self.target_producer.produce(self.topic, key=cp.key(), value=cp.value())
                self._last[key] = cp
                written.append(cp)
        self.target_producer.flush(self.timeout_s)
        if self.sync_group_offsets:
            self._sync_group_offsets(written)
        return written

    def _sync_group_offsets(self, checkpoints: list[Checkpoint]) -> None:
        """Write translated offsets into target groups that are not active there; never backwards."""
        by_group: dict[str, list[Checkpoint]] = {}
        for cp in self._last.values():
            by_group.setdefault(cp.group, []).append(cp)
        if not by_group:
            return
        described = self.target_admin.describe_consumer_groups(list(by_group), request_timeout=self.timeout_s)
        for group, cps in by_group.items():
            try:
                state = described[group].result(timeout=self.timeout_s).state
            except KafkaException:
                state = ConsumerGroupState.DEAD
            if state not in (ConsumerGroupState.EMPTY, ConsumerGroupState.DEAD, ConsumerGroupState.UNKNOWN):
                continue  # active on the target: the application owns its offsets there
            current = {}
            try:
                res = self.target_admin.list_consumer_group_offsets(
                    [ConsumerGroupTopicPartitions(group)], request_timeout=self.timeout_s)[group].result(timeout=self.timeout_s)
                current = {(tp.topic, tp.partition): tp.offset for tp in res.topic_partitions}
            except KafkaException:
                pass
            moves = [TopicPartition(cp.topic, cp.partition, cp.downstream_offset) for cp in cps
                     if cp.downstream_offset > current.get((cp.topic, cp.partition), -1)]
            if not moves:
                continue
            try:
                self.target_admin.alter_consumer_group_offsets(
                    [ConsumerGroupTopicPartitions(group, moves)], request_timeout=self.timeout_s)[group].result(
                    timeout=self.timeout_s)
                log.info("synced offsets of group %s on the target: %s", group,
                         {f"{m.topic}-{m.partition}": m.offset for m in moves})
            except KafkaException as e:
                # the group became active between the check and the write: it owns its offsets now
                log.info("group %s offset sync skipped: %s", group, e)
