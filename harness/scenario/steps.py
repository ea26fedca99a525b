"""The timeline's steps: when each starts, what it is called, and which action carries it out."""

from __future__ import annotations

import time

from harness.scenario import failover
from harness.scenario.actions.registry import action_for
from harness.scenario.context import DrillContext


def describe(step) -> str:
    """A short human name for a step ('blackhole primary<->dr', 'kill_broker dr/1', ...)."""
    return step.name or action_for(step).describe(step)


def run_step(ctx: DrillContext, step) -> str:
    """Carry out one step; returns a one-line outcome. Exceptions propagate to the engine."""
    return action_for(step).apply(ctx, step)


def wait_for_start(ctx: DrillContext, step) -> bool:
    """Block until the step's time or condition; False when the drill is being stopped."""
    if step.at is not None:
        while ctx.elapsed() < step.at:
            if ctx.stop_requested.wait(min(0.5, step.at - ctx.elapsed())):
                return False
    if step.when is not None:
        deadline = time.monotonic() + step.when.timeout
        while time.monotonic() < deadline:
            lag = failover.current_lag(ctx, step.when.flow)
            if lag is not None and lag <= step.when.lag_at_most:
                return True
            if ctx.stop_requested.wait(1.0):
                return False
        ctx.log(f"condition lag <= {step.when.lag_at_most} not met within {step.when.timeout:g}s; running the step anyway")
    return not ctx.stop_requested.is_set()
