"""Steady load and an exactly-once check for the replicator's resume tests."""

from __future__ import annotations

import collections
import threading
import time

from confluent_kafka import Producer

from .kafka_helpers import read_records, values_in, wait_for


def produce(bootstrap: str, topic: str, values: list[bytes], pause_s: float = 0.0, timestamp_ms: int = 0) -> None:
    """Round-robin over partitions (no key); ``pause_s`` between records makes a steady flow;
    ``timestamp_ms`` (0: now) is every record's timestamp."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5,
                  "log_level": 0})
    for v in values:
        p.produce(topic, v, timestamp=timestamp_ms)
        p.poll(0)
        if pause_s:
            time.sleep(pause_s)
    assert p.flush(30) == 0


class SteadyLoad:
    """Produces ``count`` records at about ``rate`` per second in a thread."""

    def __init__(self, bootstrap: str, topic: str, prefix: str, count: int, rate: float):
        self.values = [f"{prefix}-{i}".encode() for i in range(count)]
        self._thread = threading.Thread(target=produce, args=(bootstrap, topic, self.values, 1.0 / rate))

    def __enter__(self) -> SteadyLoad:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._thread.join(timeout=300)
        assert not self._thread.is_alive(), "the load did not finish"


def exactly_once(cluster, topic: str, partitions: int, expected: list[bytes]) -> None:
    """Wait for every expected record, give late copies time to land, then check there are none."""
    wait_for(lambda: set(expected) <= set(values_in(cluster, topic)), 180, f"all {len(expected)} records in {topic}")
    time.sleep(5)  # a duplicate written by a replay would land within a batch or two
    counts = collections.Counter(m.value() for m in read_records(cluster.bootstrap, topic, partitions))
    twice = {v: n for v, n in counts.items() if n > 1}
    assert not twice, f"{len(twice)} records copied more than once, e.g. {list(twice.items())[:5]}"
    assert set(counts) == set(expected)
