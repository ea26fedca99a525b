"""set_link: change a WAN link's latency, jitter, bandwidth, resets or slicing while traffic flows."""

from __future__ import annotations

from mirrordrill.harness.drill.actions.link_action import LinkAction
from mirrordrill.harness.drill.context import DrillContext
from mirrordrill.harness.drill.schema_timeline import SetLink
from mirrordrill.harness.lab.network.wan import LinkConditions


class SetLinkAction(LinkAction):
    step_type = SetLink

    def may_duplicate(self, step: SetLink) -> bool:
        # resets after N ms close connections mid-request, as reset_connections does
        return step.reset_after_ms is not None

    def apply(self, ctx: DrillContext, step: SetLink) -> str:
        ctx.env.link(*step.link).set(LinkConditions(
            latency_ms=step.latency_ms, jitter_ms=step.jitter_ms, bandwidth_kb_s=step.bandwidth_kb_s,
            reset_after_ms=step.reset_after_ms, slice_bytes=step.slice_bytes, slice_delay_us=step.slice_delay_us),
            direction=step.direction)
        return "conditions set"

    def undo(self, ctx: DrillContext, step: SetLink) -> str:
        return self.heal_link(ctx, step)
