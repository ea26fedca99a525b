"""Planted checkpoint faults, for the mutation suite only (``./mirrordrill test --mutants``).

The suite proves that a failover drill goes red when offset translation is wrong. It asks the
bundled replicator for a wrong translation through ``MIRRORDRILL_PLANTED_FAULT``; that variable
is honoured only next to ``MIRRORDRILL_MUTATION_SUITE=1``, which only the suite sets, so a
stray setting in a real deployment stops the replicator (exit 2) instead of corrupting offsets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

FAULT_ENV = "MIRRORDRILL_PLANTED_FAULT"
SUITE_ENV = "MIRRORDRILL_MUTATION_SUITE"
FAULTS = ("checkpoint-offset+100", "checkpoint-offset-100", "checkpoint-frozen")


class PlantedFaultRefused(ValueError):
    """A planted fault asked for outside the mutation suite, or one that does not exist."""


@dataclass(frozen=True)
class CheckpointFault:
    """How checkpoints are made wrong: translated offsets shifted, or never advanced past the first."""

    shift: int = 0
    frozen: bool = False

    def downstream(self, translated: int) -> int:
        return max(0, translated + self.shift)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> "CheckpointFault | None":
        """The fault ``environ`` plants (None: none); raises ``PlantedFaultRefused`` when it may not."""
        name = environ.get(FAULT_ENV, "")
        if not name:
            return None
        if environ.get(SUITE_ENV) != "1":
            raise PlantedFaultRefused(
                f"{FAULT_ENV}={name} plants a fault in the checkpoints and is only for the mutation suite "
                f"(./mirrordrill test tests/mutants --mutants); unset {FAULT_ENV} to replicate correctly")
        if name == "checkpoint-frozen":
            return cls(frozen=True)
        if name in ("checkpoint-offset+100", "checkpoint-offset-100"):
            return cls(shift=int(name.removeprefix("checkpoint-offset")))
        raise PlantedFaultRefused(f"{FAULT_ENV}={name} is not a planted fault; known: {', '.join(FAULTS)}")
