"""What the steps on a WAN link share: how they are named and which links and directions exist."""

from __future__ import annotations

from typing import ClassVar

from mirrordrill.harness.drill.actions.base import Action, StepProblem, TimelineFacts
from mirrordrill.harness.drill.context import DrillContext


class LinkAction(Action):
    """A step on the link between two clusters, optionally in one data direction."""

    # Why a step that acts on the whole link refuses ``direction`` (None: it may act one way); a
    # direction accepted and ignored would make the drill look one-way when it is not.
    whole_link: ClassVar[str | None] = None
    whole_link_accepts_both: ClassVar[bool] = False  # ``direction: both`` says what it does anyway

    def describe(self, step) -> str:
        return f"{step.do} {step.link[0]}<->{step.link[1]}" + (f" ({step.direction})" if step.direction else "")

    def validate(self, step, facts: TimelineFacts) -> list[StepProblem]:
        a, b = step.link
        problems: list[StepProblem] = []
        for j, end in enumerate(step.link):
            problems += facts.unknown_cluster(("link", j), end)
            if problems:  # the link is not looked up, nor its other end checked
                break
        if not problems and frozenset(step.link) not in facts.links:
            problems.append(StepProblem(("link",), f"no WAN link between {a} and {b}"))
        d = step.direction
        if d is not None and d not in (f"{a}->{b}", f"{b}->{a}", "both"):
            problems.append(StepProblem(("direction",), f"direction {d!r}: valid are '{a}->{b}', '{b}->{a}' or 'both'"))
        if self.whole_link is not None and d is not None and not (d == "both" and self.whole_link_accepts_both):
            problems.append(StepProblem(("direction",), self.whole_link))
        return problems

    def heal_link(self, ctx: DrillContext, step) -> str:
        """The inverse of every fault on a link, as the ``heal`` step makes it: proxies up, every
        condition removed, held data delivered -- both directions, whatever ``step.direction``."""
        ctx.env.link(*step.link).heal()
        return "clean link"
