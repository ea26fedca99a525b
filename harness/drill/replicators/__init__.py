"""Replicator adapters: one interface (``ReplicatorAdapter``), several kinds, one factory.

Kinds are registered by dotted path and imported only when used, so a drill against MM2
never imports Spark. Every kind comes through the entry point group ``mirrordrill.replicators``
(name: the kind, value: ``module:Class``): the built-in ones from mirrordrill's own
pyproject.toml, others from any installed package; code (a test) adds one with
``register_replicator_kind``. Everything
else about a kind (its options, version, mode, the drill-file fields it reads) is declared on
its adapter class (see ``ReplicatorAdapter``), so the drill file, the CLI and the engine read the
kinds from here and their facts from the class, and name none.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import re
import warnings
from collections.abc import Mapping
from importlib.metadata import EntryPoint, distributions
from types import MappingProxyType
from typing import Any

from mirrordrill.harness.drill.replicators.errors import ReplicatorError, ReplicatorNotReady, SetupError, UnsupportedOperation
from mirrordrill.harness.drill.replicators.interface import ReplicatorAdapter, RunInputs
from mirrordrill.harness.drill.replicators.measurements import OffsetLagProbe, PartitionMetrics, ReplicatorMetrics
from mirrordrill.harness.drill.replicators.processes import ProcessReplicator
from mirrordrill.harness.drill.replicators.setup import FlowSpec, ReplicationSetup

ENTRY_POINT_GROUP = "mirrordrill.replicators"
DISTRIBUTION = "mirrordrill"  # the package whose entry points are the built-in kinds

# The kinds mirrordrill's own package declares (pyproject.toml), in the order the CLI offers
# them; the first is the drill file's default. Other packages' kinds follow, by name.
BUILT_IN_KINDS: tuple[str, ...] = ("pyspark", "mirrormaker2", "command", "mirrormaker1")

_kinds: dict[str, str | type[ReplicatorAdapter]] = {}
REPLICATOR_KINDS: Mapping[str, str | type[ReplicatorAdapter]] = MappingProxyType(_kinds)
"""Every replicator kind, as ``module:Class`` or the class itself (a subclass of ``ReplicatorAdapter``);
a read-only view that follows registration."""

__all__ = [
    "BUILT_IN_KINDS",
    "FlowSpec",
    "MissingBuiltInKinds",
    "OffsetLagProbe",
    "PartitionMetrics",
    "ProcessReplicator",
    "REPLICATOR_KINDS",
    "ReplicationSetup",
    "ReplicatorAdapter",
    "ReplicatorError",
    "ReplicatorMetrics",
    "ReplicatorNotReady",
    "RunInputs",
    "SetupError",
    "UnknownReplicatorKind",
    "UnsupportedOperation",
    "make_replicator",
    "register_replicator_kind",
    "replicator_class",
    "replicator_kinds",
    "sweepable_kinds",
    "unregister_replicator_kind",
]


class UnknownReplicatorKind(ValueError):
    """A replicator kind that is not registered; the message lists the valid ones."""


def register_replicator_kind(kind: str, adapter: str | type[ReplicatorAdapter]) -> None:
    """Add a replicator kind: ``adapter`` is its class or its ``module:Class`` path (imported when
    used). The drill file, ``--replicator`` and the engine accept it from then on. TypeError when
    the name is taken."""
    if kind in _kinds:
        raise TypeError(f"replicator kind {kind!r} is registered already")
    _kinds[kind] = adapter


def unregister_replicator_kind(kind: str) -> None:
    """Take a registered kind away again (the built-in ones stay)."""
    if kind not in BUILT_IN_KINDS:
        _kinds.pop(kind, None)


def replicator_kinds() -> tuple[str, ...]:
    """Every kind's name: the built-in ones first, then the installed and registered ones."""
    return tuple(_kinds)


def sweepable_kinds() -> tuple[str, ...]:
    """The kinds sweep, calibrate and bench can run (their adapters declare ``sweepable``)."""
    return tuple(kind for kind in _kinds if replicator_class(kind).sweepable)


class MissingBuiltInKinds(RuntimeError):
    """mirrordrill's own entry points are not installed: its package metadata is missing."""


def canonical(name: str) -> str:
    """A distribution's name as packaging compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def entry_points(group: str) -> list[EntryPoint]:
    """``group``'s entry points of every installed distribution. Unlike importlib's own
    ``entry_points``, a distribution seen twice is read twice: a stale ``mirrordrill.egg-info`` in a
    checkout on ``PYTHONPATH`` (left by an older build) would otherwise hide the environment's
    current metadata, and with it the built-in kinds."""
    return [ep for dist in distributions() for ep in dist.entry_points.select(group=group)]


def _register_entry_points() -> None:
    """The kinds installed packages declare, built-in ones first. A second package that reuses a
    taken name is left out, with a warning: a plugin cannot replace a built-in replicator under the
    drill files that name it."""
    declared: dict[str, str] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        ours = ep.dist is not None and canonical(ep.dist.name) == DISTRIBUTION
        taken = declared.get(ep.name)
        # the same name and class twice is one package seen twice (an editable install's metadata
        # beside a build's), not a conflict
        if (ep.name in BUILT_IN_KINDS and not ours) or (taken is not None and taken != ep.value):
            warnings.warn(f"{ENTRY_POINT_GROUP} entry point {ep.name!r} ({ep.value}) is left out: "
                          "that replicator kind exists already", stacklevel=2)
        else:
            declared.setdefault(ep.name, ep.value)
    missing = [kind for kind in BUILT_IN_KINDS if kind not in declared]
    if missing:
        raise MissingBuiltInKinds(
            f"no {ENTRY_POINT_GROUP} entry point for {', '.join(missing)}: mirrordrill's package metadata is "
            "not installed; install the package (pip install mirrordrill, or ./mirrordrill from a checkout)")
    for kind in (*BUILT_IN_KINDS, *sorted(set(declared) - set(BUILT_IN_KINDS))):
        _kinds[kind] = declared[kind]


_register_entry_points()


def replicator_class(kind: str) -> type[ReplicatorAdapter]:
    """The adapter class of ``kind``; UnknownReplicatorKind (listing valid kinds) otherwise."""
    adapter = REPLICATOR_KINDS.get(kind)
    if adapter is None:
        close = difflib.get_close_matches(str(kind), list(REPLICATOR_KINDS), n=1, cutoff=0.5)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UnknownReplicatorKind(f"unknown replicator kind {kind!r}{hint}; valid kinds: {', '.join(sorted(REPLICATOR_KINDS))}")
    if not isinstance(adapter, str):
        return adapter
    module_name, _, class_name = adapter.partition(":")
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
