"""Each start of a replicator's processes, as the processes report it, told apart as first starts and restarts."""

from __future__ import annotations

from typing import Any


class StartLog:
    """Starts seen so far, keyed by (process, start time); a process polled twice is one start.

    A restart is a later start of a process this replicator already started (after a kill, say).
    A failback's re-protect at the same location is another replicator with its own log, so its
    start counts as a first start there."""

    def __init__(self) -> None:
        self._starts: dict[tuple[str, int], dict[str, Any]] = {}

    def record(self, process: str, startup: dict[str, Any]) -> None:
        key = (process, startup["started_at_ms"])
        restart = any(p == process and at < key[1] for p, at in self._starts)
        self._starts[key] = {"process": process, **startup, "restart": restart}

    def entries(self) -> list[dict[str, Any]]:
        return [self._starts[k] for k in sorted(self._starts, key=lambda k: (k[1], k[0]))]
