"""Allure's behaviour labels for a drill: epic, feature = the topology's shape, story = each fault.

They let a report of many drills (a pytest run, a quarter of runs) be browsed by "which
topologies" and "which faults", the way Allure users browse features and stories.
"""

from __future__ import annotations

from mirrordrill.harness.drill.actions.registry import step_facts
from mirrordrill.harness.drill.results import DrillResults

EPIC = "cross-cluster replication drills"
# The engine's own end-of-load drain: a timeline entry that is no step, and no fault. A step's
# kind is a fault unless its action declares otherwise (``StepFacts.fault``).
_DRAIN_KIND = "drain"


def is_fault(kind: str) -> bool:
    """Whether a timeline entry's kind injects a fault (or moves the applications), as reports show it."""
    facts = step_facts(kind)
    return facts.fault if facts is not None else kind != _DRAIN_KIND


def topology_shape(flow_names: list[str]) -> str:
    """The replication topology's shape, from the flows' ``source->target`` names."""
    pairs = {tuple(name.split(" ")[0].split("->", 1)) for name in flow_names if "->" in name}
    if not pairs:
        return "no flow"
    sources, targets = {s for s, _ in pairs}, {t for _, t in pairs}
    if all((t, s) in pairs for s, t in pairs):
        return "active-active" if len(sources) == 2 else "mesh"
    if len(pairs) == 1:
        return "active-passive"
    if len(sources) == 1:
        return "fan-out"
    if len(targets) == 1:
        return "hub-and-spoke"  # spokes aggregated into one hub
    if sources & targets and not any((t, s) in pairs for s, t in pairs):
        return "chain"
    return "mixed"


def faults(run: DrillResults) -> list[str]:
    """The kinds of fault (and failover) the drill's timeline injected, in order of first use."""
    kinds = []
    for entry in run.summary.timeline:
        if is_fault(entry.kind) and entry.kind not in kinds:
            kinds.append(entry.kind)
    return kinds or ["no fault"]


def behaviour_labels(run: DrillResults) -> list[tuple[str, str]]:
    """``(name, value)`` pairs: one epic, one feature (the topology), one story per fault."""
    shape = topology_shape([f.name for f in run.flows])
    return [("epic", EPIC), ("feature", shape)] + [("story", kind) for kind in faults(run)]
