"""What a Kafka client sees through a link: round-trip time of real protocol requests."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from confluent_kafka.admin import AdminClient


@dataclass(frozen=True)
class RoundTrip:
    """Round-trip times in milliseconds of metadata requests over one established connection."""

    samples_ms: tuple[float, ...]

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples_ms)

    @property
    def min_ms(self) -> float:
        return min(self.samples_ms)


def measure_round_trip(bootstrap: str, samples: int = 9, timeout_s: float = 10.0) -> RoundTrip:
    """Time ``samples`` metadata requests after one warm-up (which opens the connection)."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    admin.list_topics(timeout=timeout_s)
    out = []
    for _ in range(samples):
        t = time.perf_counter()
        admin.list_topics(timeout=timeout_s)
        out.append((time.perf_counter() - t) * 1000.0)
    return RoundTrip(tuple(out))
