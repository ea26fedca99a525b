"""The part of a flow's warm-up that serves the whole process, done by one flow for all.

A flow's warm-up (``spark_stream.warm_up``) is one of two things. The heartbeat round trip runs
records through the flow's sink producer, the Kafka consumer and the row converters until the
JVM has compiled their per-record paths; compiled code belongs to the JVM, not to a flow, so
once is enough for a process. Every other flow runs an empty range instead, which opens its own
sink producer (each target has its own) and plans its own transform. With three flows starting
together on 2 cores (fan-out), the three round trips ran at once and each flow's warm-up took
8.4-10.2 s (bench at e227272).

The round trip crosses the flow's link twice (heartbeats written to its target and read back),
so it goes to the flow with the quickest link: the one whose first topic sync took least (a
round trip takes about twice as long through a link six times slower;
see docs/measurements/behind-the-code.md#replicator-shared-warm-up-py). A flow that
does not run it counts as warm only once it ended, or once ``patience_s`` passed since the
process chose (the chosen flow's query may never start, e.g. its target is down): its first
records must not meet interpreted code, but it must not wait forever either. With no flow
chosen (none had topics at its first sync), each flow runs its own round trip, as alone.
"""

from __future__ import annotations

import threading
import time


class SharedWarmUp:
    """Which flow of the process runs the heartbeat round trip, and whether it ended."""

    def __init__(self, owner: str | None = None, patience_s: float = 60.0) -> None:
        self.owner = owner  # None: each flow runs its own
        self._ended = threading.Event()
        self._deadline = time.monotonic() + patience_s

    @classmethod
    def quickest(cls, sync_seconds: dict[str, float], patience_s: float = 60.0) -> SharedWarmUp:
        """Owned by the flow whose first topic sync took least (flows that cannot run it left out)."""
        owner = min(sync_seconds, key=lambda flow: (sync_seconds[flow], flow), default=None)
        return cls(owner, patience_s)

    def runs_round_trip(self, flow: str) -> bool:
        return self.owner is None or flow == self.owner

    def ended(self) -> None:
        """The round trip is over (done or failed: a failure is not retried, the query warms up itself)."""
        self._ended.set()

    def ready(self) -> bool:
        """Each flow runs its own round trip, the chosen flow's ended, or waiting for it ran out of patience."""
        return self.owner is None or self._ended.is_set() or time.monotonic() >= self._deadline
