"""A flow's query changes whole, and none after the process closed the flow.

The process's stop (``FlowSupervisor.run``) used to wait for each control pass to end, since a
pass may be starting or stopping a query and Spark must not stop under it. But most of a pass is
round trips to the flow's clusters, and against a dead cluster one round trip blocks for its
whole timeout: after an unplanned failover, the replicator out of the killed primary sat in a
30 s topic refresh until the harness's stop grace ran out and it was killed. With this gate the
stop waits only for a query change under way; a pass still waiting on a cluster finds the gate
closed when it comes back and leaves the query alone.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class QueryGate:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._closed = False

    @contextmanager
    def change(self) -> Iterator[bool]:
        """Held while a pass starts or stops the query; yields False once the flow is closed (change nothing)."""
        with self._lock:
            yield not self._closed

    @contextmanager
    def closing(self) -> Iterator[None]:
        """Waits for a change under way, closes the gate, and holds it while the query stops for good."""
        with self._lock:
            self._closed = True
            yield

    @property
    def closed(self) -> bool:
        return self._closed
