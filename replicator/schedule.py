"""Fixed-rate schedules for the replicator's control loop (topic refresh, heartbeats, checkpoints...)."""

from __future__ import annotations

import time


class Every:
    """Due at once, then every ``seconds`` after the previous due time (never when ``seconds`` is None).

    Fixed rate, as MM2's schedulers run: counted from the due time, not from the loop tick that
    noticed it, so a loop that wakes late does not push every later run back. Counted from the
    tick, `emit.checkpoints.interval.seconds = 5` wrote a checkpoint every 5.1-5.8 s, and the
    checkpoint a failover finds was that much older.
    """

    def __init__(self, seconds: float | None, now: float | None = None):
        self.seconds = seconds
        self.next = (time.monotonic() if now is None else now) if seconds is not None else float("inf")

    def due(self, now: float) -> bool:
        if now < self.next:
            return False
        self.next += self.seconds or 0
        if self.next <= now:  # a whole period behind (a long pass, a paused process): no burst to catch up
            self.next = now + (self.seconds or 0)
        return True

    def now(self) -> None:
        """Due at the next tick."""
        self.next = time.monotonic()


def wait_until_due(schedules: list[Every], now: float, longest_s: float, shortest_s: float = 0.01) -> float:
    """How long the loop may sleep: until the earliest schedule is due, at most ``longest_s``.

    At least ``shortest_s``, so a schedule that is due but not consulted cannot spin the loop."""
    earliest = min((s.next for s in schedules), default=float("inf"))
    return max(shortest_s, min(longest_s, earliest - now))
