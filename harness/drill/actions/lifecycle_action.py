"""What the steps that stop, kill, pause, resume, restart or start a running thing share."""

from __future__ import annotations

from abc import abstractmethod
from typing import ClassVar

from mirrordrill.harness.drill.actions.base import Action, NotUndoable
from mirrordrill.harness.drill.context import DrillContext

# What brings back what each verb changed. A restart ends where it began (running): nothing to undo.
INVERSE_VERBS = {"stop": "start", "kill": "start", "pause": "resume", "resume": "pause", "start": "stop"}


class LifecycleAction(Action):
    """``do: <verb>_<noun>`` (``kill_broker``, ``pause_replicator``) on one broker, cluster or replicator."""

    noun: ClassVar[str]  # the ``do:`` suffix, and the first word of the outcome

    def verb(self, step) -> str:
        return step.do.removesuffix("_" + self.noun)

    @abstractmethod
    def run(self, ctx: DrillContext, step, verb: str) -> None:
        """Do ``verb`` (one of the step's verbs, or an inverse of one) to the step's target."""

    def apply(self, ctx: DrillContext, step) -> str:
        verb = self.verb(step)
        self.run(ctx, step, verb)
        return f"{self.noun} {verb}"

    def undo(self, ctx: DrillContext, step) -> str:
        verb = self.verb(step)
        if verb not in INVERSE_VERBS:
            raise NotUndoable(f"{step.do} has no inverse: it ends where it began, running")
        self.run(ctx, step, INVERSE_VERBS[verb])
        return f"{self.noun} {INVERSE_VERBS[verb]}"
