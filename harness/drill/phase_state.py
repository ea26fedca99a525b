"""What the drill's phases share: the run's status line, its outcome, and stopping a phase's parts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from mirrordrill.harness.drill.stopping import StopPart, stop_in_turn

Log = Callable[[str], None]  # the drill's log


@dataclass
class RunStatus:
    """What the progress line shows: the phase, and the step running now (read by the progress thread)."""

    phase: str = "starting"
    step_name: str = ""


@dataclass
class Outcome:
    """How the run ended: set where it ends, read by the stops (drain the observers or not) and the judges."""

    interrupted: bool = False
    error: str | None = None
    step_failures: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.interrupted and self.error is None


class Phase(Protocol):
    """One part of a run. Its stop is registered before its start runs, so stop also undoes a start that
    failed half-way; ``outcome`` tells it how the run ended (a clean end drains the observers)."""

    def start(self) -> None: ...

    def stop(self, outcome: Outcome) -> None: ...


def stop_parts(parts: list[StopPart], outcome: Outcome, log: Log) -> None:
    """Stop every part in turn; a Ctrl-C meanwhile marks the run interrupted."""
    outcome.interrupted = stop_in_turn(parts, log) or outcome.interrupted
