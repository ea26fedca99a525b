"""Replication metrics per target partition: from the producer interceptor's files and the clusters.

The JVM interceptor writes cumulative counts and a latency histogram per target partition;
this module turns successive readings into rates, percentiles and lag, and writes one JSON
document (``metrics.json``) that the harness and people read.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

BUCKETS = 32  # must match MirrorProducerInterceptor.BUCKETS


@dataclass
class PartitionMetrics:
    topic: str
    partition: int
    records: int = 0
    bytes: int = 0
    errors: int = 0
    records_per_s: float = 0.0
    bytes_per_s: float = 0.0
    latency_avg_ms: float | None = None
    latency_p50_ms: float | None = None
    latency_p99_ms: float | None = None
    latency_max_ms: int | None = None
    lag: int | None = None  # source end offset minus the replicated position
    histogram: list[int] = field(default_factory=lambda: [0] * BUCKETS, repr=False)
    latency_sum_ms: int = field(default=0, repr=False)


def histogram_percentile(hist: list[int], q: float) -> float | None:
    """Upper bound (ms) of the log2 bucket holding the q-quantile; None when empty."""
    total = sum(hist)
    if total == 0:
        return None
    rank = q * total
    seen = 0
    for i, n in enumerate(hist):
        seen += n
        if seen >= rank and n:
            return float(1 << i) if i else 1.0
    return float(1 << (len(hist) - 1))


def read_interceptor_files(metrics_dir: Path, ignored_topics: frozenset[str] = frozenset()
                           ) -> dict[tuple[str, int], PartitionMetrics]:
    """Sum the cumulative figures of every producer's file in ``metrics_dir``, but for ``ignored_topics``."""
    out: dict[tuple[str, int], PartitionMetrics] = {}
    if not metrics_dir.exists():
        return out
    for f in metrics_dir.glob("producer-*.json"):
        try:
            doc = json.loads(f.read_text())
        except (OSError, ValueError):
            continue  # being replaced right now; next reading gets it
        for p in doc.get("partitions", []):
            if p["topic"] in ignored_topics:
                continue
            key = (p["topic"], int(p["partition"]))
            m = out.setdefault(key, PartitionMetrics(*key))
            m.records += p["records"]
            m.bytes += p["bytes"]
            m.errors += p["errors"]
            m.latency_sum_ms += p["latency_sum_ms"]
            m.latency_max_ms = max(m.latency_max_ms or 0, p["latency_max_ms"])
            m.histogram = [a + b for a, b in zip(m.histogram, p["latency_histogram"], strict=True)]
    return out


class MetricsTracker:
    """Keeps the previous reading so each new one yields rates."""

    def __init__(self, metrics_dir: Path, ignored_topics: frozenset[str] = frozenset()):
        self.metrics_dir = metrics_dir
        self.ignored_topics = ignored_topics
        self._prev: dict[tuple[str, int], PartitionMetrics] = {}
        self._prev_t: float | None = None

    def sample(self, lag: dict[tuple[str, int], int] | None = None) -> list[PartitionMetrics]:
        now = time.monotonic()
        current = read_interceptor_files(self.metrics_dir, self.ignored_topics)
        dt = (now - self._prev_t) if self._prev_t else None
        for key, m in current.items():
            prev = self._prev.get(key)
            if dt and prev:
                m.records_per_s = max(0.0, (m.records - prev.records) / dt)
                m.bytes_per_s = max(0.0, (m.bytes - prev.bytes) / dt)
            if m.records:
                m.latency_avg_ms = m.latency_sum_ms / m.records
            m.latency_p50_ms = histogram_percentile(m.histogram, 0.5)
            m.latency_p99_ms = histogram_percentile(m.histogram, 0.99)
        for key, value in (lag or {}).items():
            current.setdefault(key, PartitionMetrics(*key)).lag = value
        self._prev, self._prev_t = current, now
        return sorted(current.values(), key=lambda m: (m.topic, m.partition))


def write_json_atomically(path: Path, document: dict[str, Any]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(document, indent=1))
    os.replace(tmp, path)


def as_document(flows: dict[str, list[PartitionMetrics]], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"written_ms": int(time.time() * 1000),
            "flows": {name: [{k: v for k, v in asdict(m).items() if k not in ("histogram", "latency_sum_ms")}
                             for m in ms] for name, ms in flows.items()},
            **(extra or {})}
