"""Consumer-group checkpoints (MM2 format) and the optional sync of group offsets on the target."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from mirrordrill.primitives.kafka.group_offsets import committed_offsets, group_offsets
from mirrordrill.replicator.filters import GroupFilter, TopicSelector
from mirrordrill.replicator.mm2_format import Checkpoint
from mirrordrill.replicator.offset_index import OffsetIndex
from mirrordrill.replicator.planted_faults import CheckpointFault

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
    # address and security of each side: a group's commits are read through a consumer of that
    # group, never an admin client (``primitives.kafka.group_offsets`` says why)
    source_conn: Mapping[str, str]
    target_conn: Mapping[str, str]
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
            offsets = committed_offsets(self.source_conn, g, self.selector.should_checkpoint_topic, self.timeout_s)
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
        for group, cps in by_group.items():
            remote_topics = {cp.topic for cp in cps}
            with group_offsets(self.target_conn, group) as target_group:
                try:
                    current = target_group.committed(remote_topics.__contains__, self.timeout_s)
                except KafkaException as e:
                    log.info("group %s offset sync skipped: its offsets on the target unreadable: %s", group, e)
                    continue  # unknown where it stands: a write could move it backwards
                moves = {(cp.topic, cp.partition): cp.downstream_offset for cp in cps
                         if cp.downstream_offset > current.get((cp.topic, cp.partition), -1)}
                if not moves:
                    continue
                try:
                    target_group.commit(moves, self.timeout_s)
                except KafkaException as e:
                    # the brokers refuse while the group has members: the application owns its offsets there
                    log.debug("group %s offset sync skipped: %s", group, e)
                    continue
                log.info("synced offsets of group %s on the target: %s", group,
                         {f"{t}-{p}": o for (t, p), o in sorted(moves.items())})
