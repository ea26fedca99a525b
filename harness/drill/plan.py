"""A drill file turned, once, into what the run needs: the plan.

Validation builds it (``validate.check_text``) and hands it on: preflight and the invariants'
bounds read its routes, the engine the whole plan, instead of deriving the topology, the flows
and the check pairs again (the check pairs were derived five times per run before). The faults'
facts stay with the actions that declare them (``actions/``), which the invariants read. It is frozen:
nothing in a run changes the plan,
only the running drill's state (``context.DrillContext``) changes.
"""

from __future__ import annotations

from dataclasses import dataclass

from mirrordrill.harness.drill.replicators.setup import FlowSpec
from mirrordrill.harness.drill.schema import Scenario
from mirrordrill.harness.drill.topology import CheckPair, check_pairs, flow_specs, link_conditions_of, origin_topics, topology_of
from mirrordrill.harness.lab.environment import TopologySpec
from mirrordrill.harness.lab.network.wan import LinkConditions


@dataclass(frozen=True)
class Routes:
    """Where the drill's records go: what preflight and the invariants' bounds check, and the checker compares.

    Built apart from the rest of the plan because validation needs it before it knows that every
    flow's settings are valid (which building the replicator's flow specs demands)."""

    origin_topics: dict[str, frozenset[str]]  # per cluster, the topics records originate in
    check_pairs: tuple[CheckPair, ...]  # origin -> target, following forwarding chains


def routes_of(s: Scenario) -> Routes:
    """The routes of a drill file that passed the cross checks (``validate.cross_check``)."""
    origins = origin_topics(s)
    return Routes(origin_topics={c: frozenset(t) for c, t in origins.items()},
                  check_pairs=tuple(check_pairs(s, origins)))


@dataclass(frozen=True)
class DrillPlan:
    """What one drill file means for the lab, the replicator, the checker and the invariants."""

    scenario: Scenario
    topology: TopologySpec
    flows: tuple[FlowSpec, ...]  # the replicator's flows, with the settings forced on existing clusters
    routes: Routes
    link_conditions: dict[tuple[str, str], LinkConditions]  # the WAN links' conditions at the start

    @property
    def check_pairs(self) -> tuple[CheckPair, ...]:
        return self.routes.check_pairs

    def topics_by_target(self) -> dict[str, set[str]]:
        """Per target cluster, the topic names the checked records arrive under there."""
        out: dict[str, set[str]] = {}
        for p in self.check_pairs:
            out.setdefault(p.target, set()).update(p.topic_map)
        return out

    def watched_topics(self) -> dict[str, set[str]]:
        """Per cluster, the topics whose lag is sampled: the origin topics and their copies."""
        out: dict[str, set[str]] = {}
        for p in self.check_pairs:
            out.setdefault(p.origin, set()).update(p.topic_map.values())
            out.setdefault(p.target, set()).update(p.topic_map)
        return out


def plan_of(s: Scenario, routes: Routes | None = None) -> DrillPlan:
    """The plan of a drill file that passed validation; ``routes``: its routes, when validation built them."""
    return DrillPlan(scenario=s, topology=topology_of(s), flows=tuple(flow_specs(s)),
                     routes=routes if routes is not None else routes_of(s),
                     link_conditions=link_conditions_of(s))
