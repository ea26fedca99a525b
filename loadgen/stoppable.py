"""How a load run is told to stop: one place for the local run and the distributed master."""

from __future__ import annotations

import logging

from gevent.event import Event

ABANDON_REASON = "SIGUSR1: the cluster is lost; pending sends are left uncertain"


class StoppableRun:
    """A run that stops once, for the first reason it is given (a signal, the duration, an error)."""

    def __init__(self, log: logging.Logger) -> None:
        self._stop = Event()
        self.stop_reason: str | None = None
        self._log = log

    def request_stop(self, reason: str) -> None:
        """Ask the run to stop (idempotent; the first reason wins)."""
        if not self._stop.is_set():
            self.stop_reason = reason
            self._log.info("stopping: %s", reason)
            self._stop.set()
