"""Replication loops a replicator cannot break: records copied round a cycle of flows forever.

MirrorMaker 2 breaks a cycle by name: with the ``default`` policy a remote topic's name holds
its source alias (``dr.orders``), and MM2 never sends a topic back to a cluster its name came
from (``MirrorSourceConnector.isCycle``). The ``identity`` policy removes that prefix, so MM2
has nothing left to tell a copy from an original: on a cycle of flows whose topics overlap,
each copy is copied again, under the same name, forever. The bundled replicator (pyspark)
stamps each record's path in a header (``replicator/policy.py``, ``PROVENANCE_HEADER``) and
drops what comes back. A team's own command replicator gets ``{remote_prefix}`` empty and
may or may not have such a mark: the drill warns. What each replicator makes of a loop is
one of its facts (``ReplicatorAdapter.identity_loop_problems``); this module finds the loops.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise

from mirrordrill.harness.drill.replicators import replicator_class
from mirrordrill.harness.drill.schema import FlowDef, Scenario
from mirrordrill.harness.drill.topic_names import flow_selects
from mirrordrill.harness.drill.topology import origin_topics

Report = Callable[[tuple, str], None]

PROVENANCE_SETTING = "mirrordrill.provenance.header"  # the bundled replicator's flow key (mm2_keys.py)


@dataclass(frozen=True)
class IdentityLoop:
    """A flow that closes a cycle for a topic: it would carry ``topic`` back to a cluster it came from."""

    index: int  # the flow's place in ``replication.flows``
    flow: FlowDef
    topic: str
    path: tuple[str, ...]  # the clusters the topic passed before this flow

    @property
    def cycle(self) -> str:
        return "->".join((*self.path, self.flow.target))


def loop_problems(s: Scenario, replicator: str, error: Report, warn: Report) -> None:
    """A flow that would carry a topic back to a cluster it came from, under the same name: each
    replicator says what that means for it (``identity_loop_problems``, one of its facts)."""
    if s.replication.policy != "identity":
        return
    adapter = replicator_class(replicator)
    for loop in identity_loops(s):
        adapter.identity_loop_problems(s, loop, error, warn)


def unmarked_hops(s: Scenario, loop: IdentityLoop, error: Report) -> None:
    """The bundled replicator breaks the loop only if every hop of it stamps the provenance header."""
    cycle = (*loop.path, loop.flow.target)
    hops = set(pairwise(cycle))
    for i, f in enumerate(s.replication.flows):
        if (f.source, f.target) in hops and str(f.settings.get(PROVENANCE_SETTING, True)).lower() == "false":
            error(("replication", "flows", i, "settings", PROVENANCE_SETTING),
                  f"with the identity policy topic {loop.topic!r} goes round {loop.cycle}, and only the provenance "
                  "header stops it coming back under the same name; remove "
                  f"{PROVENANCE_SETTING}: false, or use policy: default")


def identity_loops(s: Scenario) -> list[IdentityLoop]:
    """Each flow that closes a cycle for a known topic (one per flow, naming one topic that loops)."""
    out: list[IdentityLoop] = []
    seen: set[int] = set()
    for origin, topics in origin_topics(s).items():
        # identity: the name is the same everywhere
        frontier: list[tuple[str, tuple[str, ...]]] = [(t, (origin,)) for t in sorted(topics)]
        while frontier:
            topic, path = frontier.pop()
            for i, f in enumerate(s.replication.flows):
                if f.source != path[-1] or not flow_selects(f, topic):
                    continue
                if f.target in path:
                    if i not in seen:  # one line per flow, naming one topic that loops
                        seen.add(i)
                        out.append(IdentityLoop(i, f, topic, path))
                    continue
                frontier.append((topic, path + (f.target,)))
    return out
