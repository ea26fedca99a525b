"""The drill's clock: zero is when the load began producing, not when its processes were launched.

A load process needs seconds to start (Python, Locust, a Kafka client) on a busy machine. The
timeline (``at: 20s``), the planned end of the load and the plots all count from the moment
producing began; counting from the launch would run every step early and cut the load short by
its start-up time.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProducingSince:
    """When one producer was first seen producing: monotonic seconds, and the same instant in epoch ms."""

    monotonic: float
    epoch_ms: int


@dataclass(frozen=True)
class LoadClock:
    """The zero of the drill's timeline and how long, after it, the load is planned to run."""

    zero: float  # monotonic seconds
    zero_ms: int  # the same instant, epoch ms (summary.json's load_started_ms)
    until_s: float  # seconds after zero when the last producer has run its full duration

    def offset_s(self, monotonic: float) -> float:
        return monotonic - self.zero


def load_clock(producing: list[ProducingSince], duration_s: float, now: ProducingSince) -> LoadClock:
    """Zero is the first producer's start; the load lasts until every producer ran ``duration_s``
    from its own start (a producer that started later is not cut short). With no producers
    (a backlog-only drill), zero is ``now``."""
    if not producing:
        return LoadClock(now.monotonic, now.epoch_ms, duration_s)
    first = min(producing, key=lambda p: p.monotonic)
    last = max(p.monotonic for p in producing)
    return LoadClock(first.monotonic, first.epoch_ms, (last - first.monotonic) + duration_s)
