"""What every timeline action is: checks that need no cluster, how to carry it out, how to undo it.

One action class per kind of step, as Jepsen keeps one nemesis per fault: the engine finds it by
the step's ``do:`` name in ``registry.py`` and never asks what type a step is.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel

from mirrordrill.harness.drill.context import DrillContext
from mirrordrill.harness.drill.schema import Scenario
from mirrordrill.harness.drill.schema_timeline import do_values


@dataclass(frozen=True)
class StepFacts:
    """What one kind of step (one ``do:`` name) may do to a drill, read by those who judge or draw it:
    the invariants (``loses``, ``duplicates``), the sweep's catch-up (``stops_flow``,
    ``restores_flow``) and the reports' fault labels (``fault``)."""

    loses: bool = False  # may cut off a cluster long enough that what it acknowledged never leaves it
    duplicates: bool = False  # at-least-once delivery may copy a record twice after it
    stops_flow: bool = False  # replication stops until a later step brings it back: an outage
    restores_flow: bool = False  # ends such an outage
    fault: bool = True  # shown as a fault (an Allure story) on reports; False for steps that end or wait one out


NO_FACTS = StepFacts()


class NotUndoable(Exception):
    """The action has no inverse; the message says why."""


@dataclass(frozen=True)
class StepProblem:
    """One reason a step cannot run, at a field inside the step (``()``: the step as a whole)."""

    field: tuple[str | int, ...]
    message: str


@dataclass(frozen=True)
class TimelineFacts:
    """What a step's checks may consult: the drill file's declarations and the steps before it."""

    scenario: Scenario
    links: frozenset[frozenset[str]]  # pairs of clusters joined by a WAN link
    topics: Mapping[str, frozenset[str]]  # declared topics of each known cluster
    flows: frozenset[str]  # "A->B"
    earlier: tuple[BaseModel, ...] = ()  # the timeline's steps before this one
    drill_dir: Path | None = None  # the drill file's folder: runbook paths are relative to it

    def unknown_cluster(self, field: tuple[str | int, ...], name: str) -> list[StepProblem]:
        return unknown_cluster(self.scenario, field, name)


def unknown_cluster(scenario: Scenario, field: tuple[str | int, ...], name: str) -> list[StepProblem]:
    """The problem of naming a cluster the drill file does not declare (none when it does)."""
    if name in scenario.clusters:
        return []
    return [StepProblem(field, f"unknown cluster {name!r}; clusters are {list(scenario.clusters)}")]


class Action(ABC):
    """How one kind of step is checked, carried out and undone. Stateless: one instance serves every step."""

    step_type: ClassVar[type[BaseModel]]  # the step model (in schema.py) whose ``do:`` names this action handles
    # The facts of each ``do:`` name it handles; a name left out may do none of those things.
    facts: ClassVar[Mapping[str, StepFacts]] = {}

    @classmethod
    def handles(cls) -> tuple[str, ...]:
        return do_values(cls.step_type)

    @classmethod
    def facts_of(cls, do: str) -> StepFacts:
        return cls.facts.get(do, NO_FACTS)

    def may_duplicate(self, step) -> bool:
        """Whether at-least-once delivery may copy records twice after this step (its fields may decide)."""
        return self.facts_of(step.do).duplicates

    def lost_cluster(self, step) -> str | None:
        """The cluster this step may cut off so that what it acknowledged never leaves it, or None."""
        return None

    def existing_cluster_problems(self, step, existing: Collection[str], owned_prefix: str) -> list[StepProblem]:
        """Why this step may not run in a drill against the team's ``existing`` clusters (none: it may)."""
        return []

    def describe(self, step) -> str:
        """A short human name for the step when the drill file gives none."""
        return step.do

    def validate(self, step, facts: TimelineFacts) -> list[StepProblem]:
        """Problems a drill file can be told about before anything starts (no cluster needed)."""
        return []

    @abstractmethod
    def apply(self, ctx: DrillContext, step) -> str:
        """Carry the step out; returns a one-line outcome. Exceptions propagate to the engine."""

    @abstractmethod
    def undo(self, ctx: DrillContext, step) -> str:
        """Bring back what the step changed; raises NotUndoable (saying why) where that has no meaning."""
