"""The bundled replicator's own lag and latency figures, merged into the end-offset sample.

After a crash the replicator copies some records again, so the target's end offset runs ahead of
what it holds and end-offset lag reads 0 while records are still missing (a drill drained on it
stopped 390 records early). The replicator's own lag is exact: it reads the source offset carried
by the newest record on the target. Where a running replicator wrote it recently, the larger of the
two is the lag -- but in the topics a copy back restores, where only the history is copied
(``replicator.history``) and the re-protect's later copies are no lag, the replicator's own figure is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mirrordrill.harness.drill.replicators.measurements import OffsetLagProbe, PartitionMetrics, ReplicatorMetrics
from mirrordrill.harness.drill.replicators.setup import ReplicationSetup

Key = tuple[str, str, int]  # (flow name, remote topic, partition)


@dataclass
class OwnFigures:
    """What the replicator's status files say per partition: ack latency, and lag where fresh."""

    latency: dict[Key, float] = field(default_factory=dict)
    exact_lag: dict[Key, int] = field(default_factory=dict)

    def add(self, doc: Mapping[str, Any], fresh: bool) -> None:
        """One process's metrics.json; its lag counts only when ``fresh`` (written lately by a running process)."""
        for flow_name, parts in doc.get("flows", {}).items():
            for p in parts:
                key = (flow_name, p["topic"], p["partition"])
                if p.get("latency_avg_ms") is not None:
                    self.latency[key] = p["latency_avg_ms"]
                if fresh and p.get("lag") is not None:
                    self.exact_lag[key] = p["lag"]


def merged_metrics(sample: ReplicatorMetrics, own: OwnFigures,
                   restored: Iterable[tuple[str, str]]) -> ReplicatorMetrics:
    """The sample with each partition's lag corrected by the replicator's own figure, and its latency."""
    restored = set(restored)
    rows = []
    for r in sample.partitions:
        key = (r.flow, r.remote_topic, r.partition)
        lag = r.lag_records
        if key in own.exact_lag and (r.flow, r.topic) in restored:
            lag = own.exact_lag[key]
        elif lag is not None and key in own.exact_lag:
            lag = max(lag, own.exact_lag[key])
        rows.append(PartitionMetrics(**{**vars(r), "lag_records": lag, "replication_latency_ms": own.latency.get(key)}))
    return ReplicatorMetrics(sample.taken_at, "end-offsets + producer acks", tuple(rows), sample.notes)


def restored_topics(setup: ReplicationSetup, probe: OffsetLagProbe) -> set[tuple[str, str]]:
    """(flow name, source topic) of the topics copy-back flows restore under their original names."""
    out = set()
    for flow in setup.flows:
        selector = setup.flow_config(flow).topic_selector()
        if selector.restore_history:
            out |= {(flow.name, t) for t in probe.selected_topics(flow) if selector.restored_topic(t)}
    return out
