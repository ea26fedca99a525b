"""Replicator adapters: one interface (``ReplicatorAdapter``), several kinds, one factory.

Kinds are registered by dotted path and imported only when used, so a drill against MM2
never imports Spark. Adding a kind is one line in ``REPLICATOR_KINDS``.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from harness.drill.replicators.errors import ReplicatorError, ReplicatorNotReady, SetupError, UnsupportedOperation
from harness.drill.replicators.interface import ReplicatorAdapter
from harness.drill.replicators.measurements import OffsetLagProbe, PartitionMetrics, ReplicatorMetrics
from harness.drill.replicators.processes import ProcessReplicator
from harness.drill.replicators.setup import FlowSpec, ReplicationSetup

REPLICATOR_KINDS: Mapping[str, str] = MappingProxyType({
    "command": "harness.drill.replicators.command:CommandReplicator",
    "mirrormaker2": "harness.drill.replicators.mirrormaker2:MirrorMaker2Replicator",
    "pyspark": "harness.drill.replicators.pyspark:PySparkReplicator",
})
"""Every replicator kind, as ``module:Class`` (a subclass of ``ReplicatorAdapter``)."""

__all__ = [
    "FlowSpec",
    "OffsetLagProbe",
    "PartitionMetrics",
    "ProcessReplicator",
    "REPLICATOR_KINDS",
    "ReplicationSetup",
    "ReplicatorAdapter",
    "ReplicatorError",
    "ReplicatorMetrics",
    "ReplicatorNotReady",
    "SetupError",
    "UnknownReplicatorKind",
    "UnsupportedOperation",
    "make_replicator",
    "replicator_class",
]


class UnknownReplicatorKind(ValueError):
    """A replicator kind that is not registered; the message lists the valid ones."""


def replicator_class(kind: str) -> type[ReplicatorAdapter]:
    """The adapter class of ``kind``; UnknownReplicatorKind (listing valid kinds) otherwise."""
    path = REPLICATOR_KINDS.get(kind)
    if path is None:
        close = difflib.get_close_matches(str(kind), list(REPLICATOR_KINDS), n=1, cutoff=0.5)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UnknownReplicatorKind(f"unknown replicator kind {kind!r}{hint}; valid kinds: {', '.join(sorted(REPLICATOR_KINDS))}")
    module_name, _, class_name = path.partition(":")
    return getattr(importlib.import_module(module_name), class_name)


def make_replicator(kind: str, setup: ReplicationSetup, **options: Any) -> ReplicatorAdapter:
    """Build the ``kind`` adapter for ``setup``; option names are checked against the adapter's."""
    cls = replicator_class(kind)
    params = {name: p for name, p in inspect.signature(cls.__init__).parameters.items()
              if name not in ("self", "setup") and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    unknown = [name for name in options if name not in params]
    if unknown:
        close = difflib.get_close_matches(unknown[0], list(params), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise SetupError(f"replicator {kind!r} has no option {unknown[0]!r}{hint}; its options are: "
                         f"{', '.join(params) or 'none'}")
    missing = [name for name, p in params.items() if p.default is p.empty and name not in options]
    if missing:
        raise SetupError(f"replicator {kind!r} needs option(s) {', '.join(repr(m) for m in missing)}; "
                         f"its options are: {', '.join(params)}")
    return cls(setup, **options)
