"""The timeline's steps: when each starts, what it is called, and which action carries it out."""

from __future__ import annotations

import time
from dataclasses import dataclass

from mirrordrill.harness.drill import failover
from mirrordrill.harness.drill.actions.registry import action_for
from mirrordrill.harness.drill.context import DrillContext, now_ms


def describe(step) -> str:
    """A short human name for a step ('blackhole primary<->dr', 'kill_broker dr/1', ...)."""
    return step.name or action_for(step).describe(step)


def run_step(ctx: DrillContext, step) -> str:
    """Carry out one step; returns a one-line outcome. Exceptions propagate to the engine."""
    return action_for(step).apply(ctx, step)


@dataclass(frozen=True)
class StepStart:
    """How a step's wait ended. ``proceed`` is False when the drill is being stopped. With a
    ``when``: the condition in words, whether it held before the step ran, and when that was
    decided (epoch ms); the engine saves them with the step, because a fault injected before
    replication caught up must not read as the replicator's loss."""

    proceed: bool
    condition: str = ""
    condition_held: bool | None = None
    condition_checked_ts_ms: int | None = None


def describe_condition(when) -> str:
    """A ``when`` in words: 'lag <= 0 on primary->dr (waited up to 120s)'."""
    return f"lag <= {when.lag_at_most} on {when.flow or 'every flow'} (waited up to {when.timeout:g}s)"


def wait_for_start(ctx: DrillContext, step) -> StepStart:
    """Block until the step's time and condition."""
    if step.at is not None:
        while ctx.elapsed() < step.at:
            if ctx.stop_requested.wait(min(0.5, step.at - ctx.elapsed())):
                return StepStart(False)
    if step.when is None:
        return StepStart(not ctx.stop_requested.is_set())
    condition = describe_condition(step.when)
    deadline = time.monotonic() + step.when.timeout
    lag = None
    while time.monotonic() < deadline:
        lag = failover.current_lag(ctx, step.when.flow)
        if lag is not None and lag <= step.when.lag_at_most:
            return StepStart(True, condition, True, now_ms())
        if ctx.stop_requested.wait(1.0):
            return StepStart(False, condition, False, now_ms())
    ctx.log(f"condition lag <= {step.when.lag_at_most} not met within {step.when.timeout:g}s "
            f"(last lag {lag if lag is not None else 'unknown'}); running the step anyway")
    return StepStart(not ctx.stop_requested.is_set(), condition, False, now_ms())
