"""What goes wrong with a replicator: a setup that cannot work, a process that fails or cannot answer."""

from __future__ import annotations


class ReplicatorError(RuntimeError):
    """A replicator failed to start, died, or could not answer; the message points at its log."""


class ReplicatorNotReady(ReplicatorError):
    """The replicator did not become ready in time (or exited while starting)."""


class UnsupportedOperation(ReplicatorError, NotImplementedError):
    """The replicator cannot do this (e.g. translate offsets without a translation command)."""


class SetupError(ValueError):
    """A replication setup that cannot work; the message names the flow and the setting."""
