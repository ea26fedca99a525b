"""Planted faults, for the mutation suite only (``./mirrordrill test --mutants``).

The suite proves that each drill goes red when replication gets worse: offset translation
that is wrong (failover drills), records left out (every drill), a restart that copies records
again (the crash drill). It asks the bundled replicator for one such fault through
``MIRRORDRILL_PLANTED_FAULT``; that variable
is honoured only next to ``MIRRORDRILL_MUTATION_SUITE=1``, which only the suite sets, so a
stray setting in a real deployment stops the replicator (exit 2) instead of corrupting offsets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

FAULT_ENV = "MIRRORDRILL_PLANTED_FAULT"
SUITE_ENV = "MIRRORDRILL_MUTATION_SUITE"
FAULTS = ("checkpoint-offset+100", "checkpoint-offset-100", "checkpoint-frozen", "drop-1-in-1000",
          "duplicate-1-in-1000", "resume-offset-100", "standby-never-takes-over", "zombie-keeps-writing")


class PlantedFaultRefused(ValueError):
    """A planted fault asked for outside the mutation suite, or one that does not exist."""


def planted_name(environ: Mapping[str, str]) -> str | None:
    """The fault ``environ`` plants (None: none); raises ``PlantedFaultRefused`` when it may not."""
    name = environ.get(FAULT_ENV, "")
    if not name:
        return None
    if environ.get(SUITE_ENV) != "1":
        raise PlantedFaultRefused(
            f"{FAULT_ENV}={name} plants a fault in the replicator and is only for the mutation suite "
            f"(./mirrordrill test tests/mutants --mutants); unset {FAULT_ENV} to replicate correctly")
    if name not in FAULTS:
        raise PlantedFaultRefused(f"{FAULT_ENV}={name} is not a planted fault; known: {', '.join(FAULTS)}")
    return name


@dataclass(frozen=True)
class CheckpointFault:
    """How checkpoints are made wrong: translated offsets shifted, or never advanced past the first."""

    shift: int = 0
    frozen: bool = False

    def downstream(self, translated: int) -> int:
        return max(0, translated + self.shift)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> CheckpointFault | None:
        """The checkpoint fault ``environ`` plants (None: none of this kind); raises ``PlantedFaultRefused``
        when it may not plant one."""
        name = planted_name(environ)
        if name == "checkpoint-frozen":
            return cls(frozen=True)
        if name in ("checkpoint-offset+100", "checkpoint-offset-100"):
            return cls(shift=int(name.removeprefix("checkpoint-offset")))
        return None


@dataclass(frozen=True)
class DataPathFault:
    """How the copy itself is made wrong: records left out or written twice, or a restart that resumes too early.

    ``drop_every`` N leaves out the record at offset 10 of every N in each source partition (10, not
    0, so a short drill's partitions, which hold a few hundred records, each lose one);
    ``duplicate_every`` N writes that same record twice instead; ``resume_shift`` -100 starts a
    restarted query 100 records before the newest copy of each partition, which copies them again:
    the regression the crash drill's ``duplicates: 0`` is for."""

    drop_every: int = 0
    duplicate_every: int = 0
    resume_shift: int = 0

    @property
    def changes_records(self) -> bool:
        """Whether the query's plan changes (a resume fault only moves where a query starts)."""
        return bool(self.drop_every or self.duplicate_every)

    def resume_from(self, copied: int) -> int:
        """The source offset a restarted query treats as copied last (-1: none)."""
        return max(-1, copied + self.resume_shift)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> DataPathFault | None:
        """The data-path fault ``environ`` plants (None: none of this kind)."""
        name = planted_name(environ)
        if name == "drop-1-in-1000":
            return cls(drop_every=1000)
        if name == "duplicate-1-in-1000":
            return cls(duplicate_every=1000)
        if name == "resume-offset-100":
            return cls(resume_shift=-100)
        return None


@dataclass(frozen=True)
class StandbyFault:
    """How a driver pair is made wrong (``replication.standby``): a standby that never takes the lease, or
    writers that no takeover fences (each driver's transactional ids its own, so a paused driver's
    writes land after the standby read where to resume)."""

    never_takes_over: bool = False
    unfenced_ids: bool = False

    def id_prefix(self, prefix: str, driver: str) -> str:
        """A flow's ``transactional_id_prefix`` as this driver writes with it."""
        return f"{prefix}{driver}." if self.unfenced_ids else prefix

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> StandbyFault | None:
        name = planted_name(environ)
        if name == "standby-never-takes-over":
            return cls(never_takes_over=True)
        if name == "zombie-keeps-writing":
            return cls(unfenced_ids=True)
        return None
