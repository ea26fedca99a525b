"""The built-in invariants: what every drill checks whatever its expectations list, as Jepsen's
checker always checks its model.

- ``no_loss``: no acknowledged record lost; when the timeline kills or cuts off a primary, at
  most ``invariants.rpo_records`` per flow out of it (the file must state it);
- ``no_corruption``: nothing corrupted, nothing unexpected;
- ``no_duplicates``: none; when the timeline has a fault after which at-least-once delivery may
  repeat records, at most ``invariants.duplicates`` per flow (the file must state it);
- ``load_ran``: every producer acknowledged at least ``load_fraction`` (0.5) of rate x active time;
- ``drained``: nothing still in flight at the end (not judged when the drill was interrupted).

A file relaxes one only under ``invariants.relax`` with a reason, which the report prints.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from mirrordrill.harness.drill.actions.registry import action_for
from mirrordrill.harness.drill.results import ExpectationRow, FlowSummary, TimelineEntry
from mirrordrill.harness.drill.schema import InvariantBounds, Scenario
from mirrordrill.harness.drill.topology import CheckPair

DEFAULT_LOAD_FRACTION = 0.5

# Which steps may repeat or lose records is each action's own declaration (its ``facts``, and
# ``may_duplicate``/``lost_cluster`` where the step's fields decide): see harness/drill/actions/.


@dataclass(frozen=True)
class Fault:
    index: int  # in the timeline
    kind: str
    cluster: str | None = None  # the cluster killed or cut off (loss faults)


def repeat_faults(s: Scenario) -> list[Fault]:
    """Timeline steps after which a replicator may deliver a record twice."""
    return [Fault(i, step.do) for i, step in enumerate(s.timeline) if action_for(step).may_duplicate(step)]


def loss_faults(s: Scenario) -> list[Fault]:
    """Timeline steps that kill or cut off a cluster some flow copies from (a primary)."""
    sources = {f.source for f in s.replication.flows}
    lost = ((i, step, action_for(step).lost_cluster(step)) for i, step in enumerate(s.timeline))
    return [Fault(i, step.do, cluster) for i, step, cluster in lost if cluster is not None and cluster in sources]


def _needs_rpo(s: Scenario, pairs: tuple[CheckPair, ...]) -> list[Fault]:
    """Loss faults on a cluster some checked flow starts from or passes through (``pairs``: the plan's)."""
    return [f for f in loss_faults(s) if any(p.origin == f.cluster or f.cluster in p.via for p in pairs)]


def bound_problems(s: Scenario, pairs: tuple[CheckPair, ...], replicator: str,
                   bad: Callable[[tuple, str], None]) -> None:
    """The bounds a timeline's faults demand, missing from the file for ``replicator`` (``pairs``: the plan's)."""
    bounds = s.invariants.for_replicator(replicator)
    loss = _needs_rpo(s, pairs)
    if loss and bounds.rpo_records is None and "no_loss" not in bounds.relax:
        f = loss[0]
        bad(("timeline", f.index), f"this {f.kind} kills or cuts off {f.cluster}, so records it acknowledged may "
                                   "never reach the target, and "
                                   + _limit_needed("no_loss", "rpo_records", replicator, "the RPO in records"))
    repeat = repeat_faults(s)
    if repeat and bounds.duplicates is None and "no_duplicates" not in bounds.relax:
        f = repeat[0]
        bad(("timeline", f.index), f"after this {f.kind} at-least-once delivery may copy records twice, so "
                                   + _limit_needed("no_duplicates", "duplicates", replicator, "it",
                                                   "; write 0 for a replicator that must copy exactly once"))


def _limit_needed(invariant: str, bound: str, replicator: str, what: str, note: str = "") -> str:
    """How a file gives the built-in ``invariant`` the limit (``bound``) a fault demands, or relaxes it."""
    return (f"the built-in {invariant} invariant needs a limit: state {what} per flow, 'invariants: {{{bound}: N}}' "
            f"(or, for {replicator} only, 'invariants: {{{replicator}: {{{bound}: N}}}}'){note}, "
            f"or relax it with a reason: 'invariants: {{relax: {{{invariant}: <why>}}}}'")


def _row(invariant: str, name: str, passed: bool, actual, limit, op: str = "<=", note: str | None = None,
         relaxed: str | None = None) -> ExpectationRow:
    return ExpectationRow(name=f"invariant {invariant}: {name}", passed=passed, actual=actual, limit=limit, op=op,
                          note=note, invariant=invariant, relaxed=relaxed)


def _count_rows(invariant: str, flows: list[FlowSummary], metric: str, limit_of: Callable[[FlowSummary], int],
                bounds: InvariantBounds) -> list[ExpectationRow]:
    if invariant in bounds.relax:
        return [_row(invariant, f"{metric} (relaxed)", True, None, None, note=bounds.relax[invariant],
                     relaxed=bounds.relax[invariant])]
    rows = []
    for f in flows:
        limit, actual = limit_of(f), getattr(f, metric)
        rows.append(_row(invariant, f"{metric}[{f.name}] {'==' if limit == 0 else '<='} {limit}", actual <= limit,
                         actual, limit, "==" if limit == 0 else "<="))
    if not flows:
        rows.append(_row(invariant, metric, False, None, None, note="no flow was checked"))
    return rows


@dataclass(frozen=True)
class LoadFacts:
    """What the load did: acked records per producer id prefix (``<name>-<cluster>``), and the timeline."""

    acked_by_prefix: dict[str, int]
    timeline: list[TimelineEntry]
    load_started_ms: int | None = None


# loadgen.producer_user's <prefix>-<instance>-u<n>; a load worker's instance ends w<index> (LoadSpec.worker_instance)
_INSTANCE = re.compile(r"^(.*)-[0-9]{5}[0-9a-f]{6}(?:w[0-9]+)?-u\d+$")


def producer_prefix(producer_id: str) -> str:
    """A producer id's ``<name>-<cluster>`` part: which producer definition wrote it, where."""
    m = _INSTANCE.match(producer_id)
    return m.group(1) if m else producer_id


def _active_s(s: Scenario, cluster: str, timeline: list[TimelineEntry], load_started_ms: int | None) -> float:
    """Seconds of ``duration`` a producer starting on ``cluster`` was meant to run: failovers stop
    producers ("stop producers on X") and start them again elsewhere ("start producers on Y")."""
    where, stopped_at, idle_ms = cluster, None, 0
    for e in sorted(timeline, key=lambda e: e.start_ts_ms):
        if e.kind != "failover":
            continue
        if e.name == f"stop producers on {where}" and stopped_at is None:
            stopped_at = e.start_ts_ms
        elif e.name.startswith("start producers on ") and stopped_at is not None:
            idle_ms += e.start_ts_ms - stopped_at
            where, stopped_at = e.name.removeprefix("start producers on "), None
    if stopped_at is not None and load_started_ms is not None:  # stopped for good: ran until then
        return max(0.0, min(s.duration, (stopped_at - load_started_ms) / 1000) - idle_ms / 1000)
    return max(0.0, s.duration - idle_ms / 1000)


def _load_rows(s: Scenario, load: LoadFacts, bounds: InvariantBounds, interrupted: bool) -> list[ExpectationRow]:
    if "load_ran" in bounds.relax:
        return [_row("load_ran", "acked (relaxed)", True, None, None, note=bounds.relax["load_ran"],
                     relaxed=bounds.relax["load_ran"])]
    if interrupted:
        return [_row("load_ran", "acked", True, None, None, note="not judged: the drill was interrupted")]
    fraction = bounds.load_fraction or DEFAULT_LOAD_FRACTION
    # Unnamed producers share the id prefix "load": judged together, against their summed rates.
    groups: dict[str, list] = {}
    for p in s.load.producers:
        groups.setdefault(p.name or "load", []).append(p)
    rows = []
    for name, defs in groups.items():
        acked = sum(n for prefix, n in load.acked_by_prefix.items()
                    if any(prefix == f"{name}-{c}" for c in s.clusters))
        floor = int(sum(d.rate * _active_s(s, d.cluster, load.timeline, load.load_started_ms) for d in defs) * fraction)
        who = name if defs[0].name else "unnamed producers"
        rows.append(_row("load_ran", f"acked by {who} >= {floor} ({fraction:g} x rate x active time)",
                         acked >= max(floor, 1), acked, floor, ">="))
    return rows


def evaluate_invariants(s: Scenario, replicator: str, flows: list[FlowSummary], load: LoadFacts,
                        interrupted: bool) -> list[ExpectationRow]:
    """One row per invariant and flow (or producer) it applies to, relaxed ones with their reason."""
    bounds = s.invariants.for_replicator(replicator)
    killed = {f.cluster for f in loss_faults(s)}
    may_repeat = bool(repeat_faults(s))
    rpo = bounds.rpo_records or 0

    def loss_limit(f: FlowSummary) -> int:
        return rpo if f.source in killed or killed & set(f.via) else 0

    rows = _count_rows("no_loss", flows, "lost", loss_limit, bounds)
    rows += _count_rows("no_corruption", flows, "corrupted", lambda f: 0, bounds)
    if "no_corruption" not in bounds.relax:
        rows += _count_rows("no_corruption", flows, "unexpected", lambda f: 0, bounds)
    rows += _count_rows("no_duplicates", flows, "duplicates",
                        lambda f: (bounds.duplicates or 0) if may_repeat else 0, bounds)
    rows += _load_rows(s, load, bounds, interrupted)
    if interrupted and "drained" not in bounds.relax:
        rows.append(_row("drained", "in_flight", True, None, None,
                         note="not judged: the drill was interrupted before replication drained"))
    else:
        rows += _count_rows("drained", flows, "in_flight", lambda f: 0, bounds)
    return rows
