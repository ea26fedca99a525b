"""Replication measured from outside: lag and rates per topic-partition, from end offsets on both sides."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from mirrordrill.harness.drill.replicators.setup import FlowSpec, ReplicationSetup


@dataclass(frozen=True)
class PartitionMetrics:
    """One replicated topic-partition at one moment. None: unknown or not measurable."""

    flow: str
    topic: str
    remote_topic: str
    partition: int
    source_end_offset: int | None
    target_end_offset: int | None
    lag_records: int | None
    records_per_s: float | None = None
    bytes_per_s: float | None = None
    replication_latency_ms: float | None = None


@dataclass(frozen=True)
class ReplicatorMetrics:
    """Per topic-partition replication metrics; ``method`` says how they were measured."""

    taken_at: float
    method: str
    partitions: tuple[PartitionMetrics, ...]
    notes: tuple[str, ...] = ()

    def total_lag(self) -> int | None:
        """Sum of lags; None when any partition's lag is unknown."""
        lags = [p.lag_records for p in self.partitions]
        known = [lag for lag in lags if lag is not None]
        return None if len(known) < len(lags) else sum(known)

    def for_flow(self, flow: str) -> list[PartitionMetrics]:
        return [p for p in self.partitions if p.flow == flow]


class OffsetLagProbe:
    """Lag and record rates from end offsets on both sides, for any replicator.

    Lag is ``source end - remote end`` per partition (clamped at 0): exact while the remote
    partition holds one copy of each source record, an underestimate after duplicates (a
    crash replays records). Rates are the change of the remote end offset since the previous
    sample. Bytes/s and latency cannot be read from offsets and stay None. The harness reads
    both clusters locally, so WAN faults do not skew the reading.
    """

    def __init__(self, setup: ReplicationSetup, timeout_s: float = 10.0, keeps_partitions: bool = True) -> None:
        """``keeps_partitions=False``: the replicator places copies by its own partitioner
        (MirrorMaker 1), so a remote partition's end says nothing of its source partition's; lag
        is then ``Σ source ends - Σ remote ends`` per topic, carried by the topic's partition-0 row
        (the other rows read 0)."""
        self.setup = setup
        self.timeout_s = timeout_s
        self.keeps_partitions = keeps_partitions
        self._admins: dict[str, AdminClient] = {}
        self._previous: dict[tuple[str, str, int], tuple[float, int]] = {}
        self._target_base: dict[tuple[str, str, int], int] = {}  # (target cluster, topic, partition) -> offset

    def count_target_from_now(self) -> None:
        """Measure lag against what targets receive from now on, not their whole log.

        For replication out of a wiped (rebuilt) cluster: its offsets restarted at 0 while the
        remote topics still hold the copies made before, so ``source end - remote end`` would
        read zero lag before anything was copied.
        """
        for target in {f.target for f in self.setup.flows}:
            topics = self._admin(target).list_topics(timeout=self.timeout_s).topics
            parts = [TopicPartition(t, p) for t, meta in topics.items() for p in meta.partitions]
            for (topic, p), end in self.end_offsets(target, parts).items():
                self._target_base[(target, topic, p)] = end

    def sample(self) -> ReplicatorMetrics:
        """Measure every flow's selected topic-partitions now."""
        now = time.monotonic()
        rows: list[PartitionMetrics] = []
        notes: list[str] = []
        for flow in self.setup.flows:
            try:
                rows.extend(self._flow_rows(flow, now))
            except (KafkaException, TimeoutError) as err:
                notes.append(f"{flow.name}: not measured: {err}")
        method = "end-offsets" if self.keeps_partitions else "end-offsets summed per topic"
        return ReplicatorMetrics(taken_at=time.time(), method=method, partitions=tuple(rows), notes=tuple(notes))

    def _admin(self, cluster: str) -> AdminClient:
        if cluster not in self._admins:
            self._admins[cluster] = self.setup.env.cluster(cluster).admin()
        return self._admins[cluster]

    def selected_topics(self, flow: FlowSpec) -> dict[str, int]:
        """Source topics the flow replicates (filter, internal topics, cycles), with partition counts."""
        selector = self.setup.flow_config(flow).topic_selector()
        metadata = self._admin(flow.source).list_topics(timeout=self.timeout_s)
        policy = self.setup.replication_policy(flow.source)
        return {
            name: len(t.partitions) for name, t in metadata.topics.items()
            if t.error is None and selector.should_replicate_topic(name) and not policy.is_heartbeats_topic(name)
        }

    def end_offsets(self, cluster: str, partitions: list[TopicPartition]) -> dict[tuple[str, int], int]:
        """Each partition's log end on ``cluster``; a partition that cannot be read is left out."""
        if not partitions:
            return {}
        request = {tp: OffsetSpec.latest() for tp in partitions}
        futures = self._admin(cluster).list_offsets(request, request_timeout=self.timeout_s)
        ends: dict[tuple[str, int], int] = {}
        for tp, fut in futures.items():
            try:
                ends[(tp.topic, tp.partition)] = fut.result(timeout=self.timeout_s + 5).offset
            except KafkaException:
                continue  # e.g. the remote topic does not exist yet: unknown, not zero
        return ends

    def _flow_rows(self, flow: FlowSpec, now: float) -> list[PartitionMetrics]:
        topics = self.selected_topics(flow)
        selector = self.setup.flow_config(flow).topic_selector()
        remote = {t: selector.remote_topic(t) for t in topics}
        target_topics = self._admin(flow.target).list_topics(timeout=self.timeout_s).topics
        source_ends = self.end_offsets(flow.source, [TopicPartition(t, p) for t, n in topics.items() for p in range(n)])
        target_parts = [TopicPartition(remote[t], p) for t, n in topics.items() for p in range(n)
                        if remote[t] in target_topics and p < len(target_topics[remote[t]].partitions)]
        target_ends = self.end_offsets(flow.target, target_parts)
        rows = []
        for topic, count in sorted(topics.items()):
            for p in range(count):
                src = source_ends.get((topic, p))
                dst = target_ends.get((remote[topic], p))
                if dst is not None:
                    dst -= self._target_base.get((flow.target, remote[topic], p), 0)
                lag = max(0, src - dst) if src is not None and dst is not None else None
                rate = None
                key = (flow.name, topic, p)
                if dst is not None:
                    previous = self._previous.get(key)
                    if previous is not None and now > previous[0]:
                        rate = max(0.0, (dst - previous[1]) / (now - previous[0]))
                    self._previous[key] = (now, dst)
                rows.append(PartitionMetrics(flow=flow.name, topic=topic, remote_topic=remote[topic], partition=p,
                                             source_end_offset=src, target_end_offset=dst, lag_records=lag,
                                             records_per_s=rate))
        return rows if self.keeps_partitions else _lag_per_topic(rows)


def _lag_per_topic(rows: list[PartitionMetrics]) -> list[PartitionMetrics]:
    """Each topic's lag from its summed ends, on its partition-0 row (None when a side is unknown)."""
    out = []
    for row in rows:
        mine = [r for r in rows if r.topic == row.topic]
        if row.partition != 0:
            lag: int | None = 0
        elif any(r.source_end_offset is None or r.target_end_offset is None for r in mine):
            lag = None
        else:
            lag = max(0, sum(r.source_end_offset or 0 for r in mine) - sum(r.target_end_offset or 0 for r in mine))
        out.append(replace(row, lag_records=lag))
    return out
